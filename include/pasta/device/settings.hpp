// What device::Annotations can be told, in code (ConfigFor<device::Annotations>'s
// field) or by a PASTA_* variable: the size of its device table. No CUDA here:
// the docs check and pasta-trace read the table.
#pragma once

#include <cstdint>

#include <pasta/core/detail/variables.hpp>

namespace pasta::device {

struct AnnotationSettings {
  std::uint64_t annotation_bins = 1ull << 20;  // PASTA_ANNOTATION_BINS: bins of the device table
};

namespace detail::annotation_rows {
inline constexpr pasta::detail::Variable<AnnotationSettings> annotation_variables[] = {
    pasta::detail::var::power_of_two<&AnnotationSettings::annotation_bins, 1024, 1ull << 30>(
        "PASTA_ANNOTATION_BINS", "a power of two from 1K to 1G (suffixes K, M, G)"),
};
inline const bool entered = pasta::detail::enter_known_variables(annotation_variables);
}  // namespace detail::annotation_rows

using detail::annotation_rows::annotation_variables;
constexpr const auto& variables_of(const AnnotationSettings*) { return annotation_variables; }

}  // namespace pasta::device
