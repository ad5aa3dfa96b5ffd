// expect: is_trivially_copyable_v<E> \[with E = Fat\].+evaluated to .+false
// A type that is not an event cannot be emitted to a generic tool.
#include <pasta/pasta.hpp>
#include <string>

struct Fat {
  static constexpr pasta::EventKind kind = pasta::EventKind::kernel_launch;
  static constexpr std::string_view type_name = "Fat";
  std::string payload;
};
static_assert(pasta::Event<Fat>);
