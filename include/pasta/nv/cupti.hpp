// pasta::nv::Cupti, the NVIDIA handler most pipelines start with (CUPTI
// activity records and callbacks): the class (cupti/handler.hpp) and its
// callbacks (cupti/dispatch.hpp). Its settings: cupti/settings.hpp.
#pragma once

#include <pasta/nv/cupti/dispatch.hpp>
#include <pasta/nv/cupti/handler.hpp>
