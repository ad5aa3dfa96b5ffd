#include <doctest/doctest.h>

#include <set>
#include <string_view>
#include <vector>

#include <pasta/core/detail/reflect.hpp>
#include <pasta/core/events.hpp>

using namespace pasta;

static_assert(detail::events_are_consistent);
static_assert(detail::event_type_count == 23);
static_assert(sizeof(KernelLaunch) <= 96, "events stay small");

TEST_CASE("every event type has a unique kind, a name and a full field list") {
  std::set<std::string_view> names;
  for_each_type(all_events, [&](auto type) {
    using E = typename decltype(type)::type;
    CHECK(detail::event_name(E::kind) == E::type_name);
    CHECK(detail::fully_reflected<E>());
    names.insert(E::type_name);
  });
  CHECK(names.size() == detail::event_type_count);
  CHECK(detail::event_name(static_cast<EventKind>(99)) == "unknown");
}

TEST_CASE("enum values print by name and out-of-range values print as invalid") {
  CHECK(to_string(MemKind::managed) == "managed");
  CHECK(to_string(CopyKind::peer) == "peer");
  CHECK(to_string(SyncKind::stream) == "stream");
  CHECK(to_string(MemSpace::shared) == "shared");
  CHECK(to_string(static_cast<MemKind>(5)) == "invalid");
}

TEST_CASE("fields are visited by name, in declaration order, nested structs whole") {
  KernelLaunch e{.correlation = 3, .grid = {2, 3, 4}};
  std::vector<std::string_view> fields;
  detail::for_each_field(e, [&](std::string_view name, const auto&) { fields.push_back(name); });
  CHECK(fields == std::vector<std::string_view>{"correlation", "context", "stream", "device",
                                                "name", "grid", "block", "shared_mem_bytes",
                                                "thread", "time_ns"});
}
