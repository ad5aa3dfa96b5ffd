// The profiler an example's profiled build keeps for the whole of main. Each example makes its
// own in <example>_profiler.cpp, compiled by the host compiler: nvcc reads a .cu's host code
// with two front ends before the host compiler does, so pasta's templates stay out of the .cu.
#pragma once
#include <memory>

std::shared_ptr<void> make_profiler();
