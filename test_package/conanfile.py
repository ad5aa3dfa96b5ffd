from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout


class PastaTestConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def generate(self):
        tc = CMakeToolchain(self)
        # Conan's toolchain requires its C++ standard (CMAKE_CXX_STANDARD_REQUIRED), CMake
        # holds CUDA to it too, and CMake before 3.26 knows no C++20 flag for nvcc: it would
        # refuse every .cu file, check_language(CUDA) first. Not required, CMake leaves the
        # flag out and pasta::pasta gives nvcc -std=c++20 (docs/user-guide.md, Install).
        tc.variables["CMAKE_CUDA_STANDARD_REQUIRED"] = "OFF"
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if can_run(self):
            CMake(self).test()  # tests/consumer's ctest: the CPU program (app*.cu need a GPU)
