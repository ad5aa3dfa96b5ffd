// Marks a region with the client header alone, as a program's own code
// does: in a compiled build it declares, and the runtime defines.
#include <pasta/core/scope.hpp>

void scoped_step() { PASTA_SCOPE("step"); }
