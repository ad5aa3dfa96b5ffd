// pasta's non-template code, compiled once: the pasta::runtime library.
// Programs that link it define PASTA_COMPILED (the target does it for
// them), so that their own translation units only declare this code.
#define PASTA_IMPLEMENT
#include <pasta/pasta.hpp>
