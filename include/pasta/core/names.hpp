// Interned strings: kernel, scope and operator names travel in events as
// 32-bit ids, interned once per process. Id 0 is the empty name.
#pragma once

#include <string_view>

#include <pasta/core/detail/api.hpp>
#include <pasta/core/detail/name_id.hpp>

namespace pasta {

class NameTable;  // core/detail/name_table.hpp

// The process-wide table that handlers intern into and reports read from.
// Never destroyed: reports written from static destructors and atexit
// handlers (injection libraries) still need it.
PASTA_FUNC NameTable& names();

PASTA_FUNC NameId intern(std::string_view s);
PASTA_FUNC std::string_view name_of(NameId id);

}  // namespace pasta

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/core/detail/names_impl.hpp>
#endif
