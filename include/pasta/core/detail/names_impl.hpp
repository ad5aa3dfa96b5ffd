// Definitions for core/names.hpp: inline in header-only builds, compiled
// once otherwise (core/detail/api.hpp).
#pragma once

#include <pasta/core/detail/name_table.hpp>
#include <pasta/core/names.hpp>

namespace pasta {

PASTA_FUNC NameTable& names() {
  static NameTable* table = new NameTable;
  return *table;
}

PASTA_FUNC NameId intern(std::string_view s) { return names().intern(s); }
PASTA_FUNC std::string_view name_of(NameId id) { return names().view(id); }

}  // namespace pasta
