// Compiled with PASTA_DISABLE: every scope below must vanish. The build
// also checks that this object file references no pasta symbol.
#ifndef PASTA_DISABLE
#error "this file is compiled with PASTA_DISABLE"
#endif

#include <pasta/core/scope.hpp>

void scopes_in_a_disabled_translation_unit() {
  PASTA_SCOPE("disabled");
  pasta::start("disabled too");
  pasta::end();
}
