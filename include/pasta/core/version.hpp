// The library version; CMake reads it from here.
#pragma once

#define PASTA_VERSION_MAJOR 0
#define PASTA_VERSION_MINOR 1
#define PASTA_VERSION_PATCH 0
#define PASTA_VERSION_STRING "0.1.0"
