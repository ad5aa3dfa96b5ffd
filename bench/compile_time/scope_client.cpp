// The client header alone: a region marked in a program's own code.
#include <pasta/core/scope.hpp>

int main() {
  PASTA_SCOPE("main");
  return 0;
}
