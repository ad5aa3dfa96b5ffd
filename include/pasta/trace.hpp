// Recording and replaying traces: tools::Record writes every event to a
// file, pasta::Replay feeds a file back through any pipeline.
#pragma once

#include <pasta/pasta.hpp>
#include <pasta/trace/reader.hpp>
#include <pasta/trace/record.hpp>
#include <pasta/trace/replay.hpp>
#include <pasta/trace/writer.hpp>
