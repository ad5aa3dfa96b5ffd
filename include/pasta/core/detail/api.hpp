// How pasta's non-template functions are compiled. Header-only (the
// default): each is `inline` and defined in every translation unit that
// includes its header. Compiled: with PASTA_COMPILED defined, headers only
// declare them, and one object defines them: the pasta::runtime library
// (src/runtime.cpp), or the one translation unit of the program that
// defines PASTA_IMPLEMENT before its first pasta header (docs/user-guide.md, "Compile time").
#pragma once

#if defined(PASTA_IMPLEMENT) && !defined(PASTA_COMPILED)
#define PASTA_COMPILED 1
#endif

#ifdef PASTA_COMPILED
#define PASTA_FUNC
#else
#define PASTA_FUNC inline
#endif

// Whether this translation unit defines the functions: the *_impl.hpp files
// are included at the end of their header when it is set.
#if !defined(PASTA_COMPILED) || defined(PASTA_IMPLEMENT)
#define PASTA_DETAIL_DEFINE 1
#endif
