// The one translation unit that defines pasta's non-template code, for a
// program that builds it in instead of linking pasta::runtime.
#define PASTA_IMPLEMENT
#include <pasta/pasta.hpp>
