// fmt, as pasta includes it. nvcc's front end cannot evaluate fmt's
// consteval format-string checks, so translation units compiled by nvcc
// check format strings at run time instead.
#pragma once

#if defined(__NVCC__)
#ifndef FMT_CONSTEVAL
#define FMT_CONSTEVAL
#endif
// fmt 9 turns constexpr off under nvcc, which breaks its own
// is_constant_evaluated with g++ in C++20; the host compiler handles it.
#ifndef FMT_USE_CONSTEXPR
#define FMT_USE_CONSTEXPR 1
#endif
#endif
#include <fmt/core.h>
