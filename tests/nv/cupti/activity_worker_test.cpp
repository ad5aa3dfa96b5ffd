// nv::detail::ActivityWorker's detach protocol (Cupti::detach): no flush
// reaches a detached CUPTI, and CUPTI is attached again by the worker, not
// by the thread that detached it, once the settle time has passed. CUPTI's
// calls return an error without a GPU, which the worker does not look at.
#include <doctest/doctest.h>

#include <pasta/nv/cupti/detail/activity_worker.hpp>

#include <atomic>
#include <chrono>
#include <thread>

using pasta::nv::detail::ActivityWorker;
using pasta::nv::detail::CuptiStats;
using clock_type = std::chrono::steady_clock;

namespace {

std::atomic<int> attaches{0};
std::atomic<std::thread::id> attached_on{};
std::atomic<clock_type::rep> attached_at{0};

bool attach(void*) {
  attached_on = std::this_thread::get_id();
  attached_at = clock_type::now().time_since_epoch().count();
  attaches.fetch_add(1);
  return true;
}
bool fail_to_attach(void*) {  // subscribing failed, or stop() had begun
  attaches.fetch_add(1);
  return false;
}

}  // namespace

TEST_CASE("ActivityWorker: detached, no flush reaches CUPTI, and the worker attaches it after the settle") {
  attaches = 0;
  CuptiStats stats;
  ActivityWorker worker(stats, std::chrono::milliseconds(0));

  SUBCASE("without a worker thread nothing attaches it") {
    worker.finalize();
    CHECK(worker.detached());
    CHECK_FALSE(worker.attach_after(&attach, std::chrono::milliseconds(1)));
    CHECK(worker.detached());
    CHECK(attaches == 0);
  }

  SUBCASE("with one") {
    worker.start_thread();
    CHECK_FALSE(worker.detached());
    CHECK(worker.flush_all(0));  // reaches CUPTI

    worker.finalize();
    CHECK(worker.detached());
    CHECK_FALSE(worker.flush_all(0));  // held back
    worker.finalize();                 // twice is once
    CHECK(worker.detached());

    constexpr auto settle = std::chrono::milliseconds(30);
    const auto asked = clock_type::now();
    REQUIRE(worker.attach_after(&attach, settle));
    CHECK(attaches == 0);  // not on this thread, not at once
    const auto deadline = asked + std::chrono::seconds(5);
    while (worker.detached() && clock_type::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK_FALSE(worker.detached());
    CHECK(attaches == 1);
    CHECK(attached_on.load() != std::this_thread::get_id());
    CHECK(clock_type::time_point(clock_type::duration(attached_at.load())) - asked >= settle);
    CHECK(worker.flush_all(0));
    worker.stop_thread();
  }

  SUBCASE("an attach that fails leaves CUPTI detached, its flushes held back") {
    worker.start_thread();
    worker.finalize();
    REQUIRE(worker.attach_after(&fail_to_attach, std::chrono::milliseconds(1)));
    const auto deadline = clock_type::now() + std::chrono::seconds(5);
    while (attaches == 0 && clock_type::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(attaches == 1);
    worker.stop_thread();  // the worker's attach is over once it stopped
    CHECK(worker.detached());
    CHECK_FALSE(worker.flush_all(0));
  }
}
