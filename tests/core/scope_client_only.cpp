// A header-only program that marks regions and has none of pasta's code: it
// runs, its scopes do nothing, and it says so once.
#include <pasta/core/scope.hpp>

static void step() { PASTA_SCOPE("step"); }

int main() {
  for (int i = 0; i < 3; ++i) step();
  pasta::start("a range");
  pasta::end();
  return 0;
}
