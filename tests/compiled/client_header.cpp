// The client header alone, as tests/check_client_header.cmake preprocesses
// it: it must reach no Boost, fmt, JSON or standard container header.
#include <pasta/core/scope.hpp>

void step() { PASTA_SCOPE("step"); }
