// pasta::nv::Sanitizer, the Compute Sanitizer API handler (launches,
// allocations and memory accesses through device patches): the class
// (sanitizer/handler.hpp) and what it does at each launch
// (sanitizer/launches.hpp). Its settings: sanitizer/settings.hpp.
#pragma once

#include <pasta/nv/sanitizer/handler.hpp>
#include <pasta/nv/sanitizer/launches.hpp>
