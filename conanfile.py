# Conan 2 recipe: pasta is header-only; the package carries the headers, the
# CMake config files that the CMake install writes, and, where nvcc and the
# Compute Sanitizer API are found, the generated header that embeds the
# sanitizer patches (built from kernels/). With runtime=True it also carries
# pasta::runtime, the non-template code compiled once (a static library: the
# package then depends on the compiler settings).
from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import load
import os
import re


class PastaConan(ConanFile):
    name = "pasta"
    description = "Compose GPU profilers at compile time: handlers, processors and tools"
    license = "Apache-2.0"
    topics = ("gpu", "profiling", "cuda", "header-only")
    package_type = "static-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {"runtime": [True, False]}
    default_options = {"runtime": False}
    exports_sources = "CMakeLists.txt", "cmake/*", "include/*", "kernels/*", "src/*"
    no_copy_source = True

    def set_version(self):
        header = load(self, os.path.join(self.recipe_folder, "include", "pasta", "core", "version.hpp"))
        self.version = re.search(r'PASTA_VERSION_STRING "([0-9.]+)"', header).group(1)

    def requirements(self):
        # On machines with no Conan remote, a profile may satisfy these from
        # the system with [platform_requires] (see .ci/conan-profile).
        self.requires("boost/[>=1.74 <2]")
        self.requires("fmt/[>=9 <12]")
        self.requires("nlohmann_json/[>=3.10 <4]")

    def configure(self):
        if not self.options.runtime:
            self.package_type = "header-library"

    def validate(self):
        check_min_cppstd(self, 20)

    def layout(self):
        cmake_layout(self)

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["PASTA_BUILD_TESTS"] = False
        tc.cache_variables["PASTA_BUILD_BENCH"] = False
        tc.cache_variables["PASTA_BUILD_CLI"] = False
        tc.cache_variables["PASTA_BUILD_INJECTION"] = False
        tc.cache_variables["PASTA_BUILD_EXAMPLES"] = False
        tc.cache_variables["PASTA_BUILD_RUNTIME"] = bool(self.options.runtime)
        tc.generate()

    def package(self):
        cmake = CMake(self)
        cmake.configure()
        cache = load(self, os.path.join(self.build_folder, "CMakeCache.txt"))
        if re.search(r"^PASTA_SANITIZER_INCLUDE_DIR:PATH=(?!.*NOTFOUND).+$", cache, re.M):
            cmake.build(target="pasta_sanitizer_kernels")  # the embedded device patches
        if self.options.runtime:
            cmake.build(target="pasta_runtime")
        cmake.install()

    def package_id(self):
        if not self.info.options.runtime:
            self.info.clear()

    def package_info(self):
        self.cpp_info.bindirs = []
        if not self.options.runtime:
            self.cpp_info.libdirs = []
        self.cpp_info.set_property("cmake_find_mode", "none")  # use the installed config
        self.cpp_info.builddirs.append(os.path.join("lib", "cmake", "pasta"))
