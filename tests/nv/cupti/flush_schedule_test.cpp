// When pasta's activity worker wakes and flushes (nv::detail::FlushSchedule),
// on a simulated clock: synchronisations every few milliseconds must not make
// it spin, and flushes keep their gap.
#include <doctest/doctest.h>

#include <pasta/nv/cupti/detail/flush_schedule.hpp>

#include <chrono>
#include <cstddef>
#include <vector>

using pasta::nv::detail::FlushSchedule;
using ms = std::chrono::milliseconds;

namespace {

const FlushSchedule::clock::time_point t0{};

struct Run {
  int wakeups = 0;
  std::vector<long> flushes;  // ms from the start
};

// The worker's loop with flushes that take no time: it sleeps until the
// schedule's deadline, unless a request arrives that is due at once (a
// request the gap holds back only notifies, and the worker sleeps on).
Run simulate(FlushSchedule s, const std::vector<long>& requests, long end) {
  Run run;
  auto t = t0;
  std::size_t next = 0;
  while (t < t0 + ms(end)) {
    auto wake = s.deadline(t);
    while (next < requests.size() && t0 + ms(requests[next]) <= wake) {
      const auto at = t0 + ms(requests[next++]);
      s.request();
      if (s.due(at)) {
        wake = at;
        break;
      }
    }
    t = wake;
    ++run.wakeups;
    if (s.take(t)) {
      s.flushed(t);
      run.flushes.push_back(std::chrono::duration_cast<ms>(t - t0).count());
    }
  }
  return run;
}

std::vector<long> every(long step, long end) {
  std::vector<long> v;
  for (long t = step; t < end; t += step) v.push_back(t);
  return v;
}

}  // namespace

TEST_CASE("flush schedule: a synchronisation every 15 ms wakes the worker every 10 ms, no more") {
  // gap 100 ms, period 1 s, wake-ups every 10 ms (the queued host events).
  const Run run = simulate(FlushSchedule(ms(100), ms(1000), ms(10), t0), every(15, 1000), 1000);
  CHECK(run.wakeups == 100);
  CHECK(run.flushes == std::vector<long>{100, 200, 300, 400, 500, 600, 700, 800, 900, 1000});
}

TEST_CASE("flush schedule: a request inside the gap waits for it, asleep") {
  FlushSchedule s(ms(100), ms(0), ms(10), t0);
  s.request();
  CHECK_FALSE(s.due(t0 + ms(5)));
  CHECK(s.deadline(t0 + ms(5)) == t0 + ms(15));
  CHECK(s.deadline(t0 + ms(95)) == t0 + ms(100));
  CHECK_FALSE(s.take(t0 + ms(99)));
  CHECK(s.due(t0 + ms(100)));
  CHECK(s.take(t0 + ms(100)));
  CHECK_FALSE(s.due(t0 + ms(100)));  // taken
}

TEST_CASE("flush schedule: a request past the gap is served at once") {
  const Run run = simulate(FlushSchedule(ms(100), ms(0), ms(100), t0), {150, 420}, 500);
  CHECK(run.flushes == std::vector<long>{150, 420});
  // At 100, 150 (the request), 250, 350, 420 (the request), 520.
  CHECK(run.wakeups == 6);
}

TEST_CASE("flush schedule: the period flushes with no request, and never early") {
  const Run run = simulate(FlushSchedule(ms(100), ms(250), ms(100), t0), {}, 1000);
  CHECK(run.flushes == std::vector<long>{250, 500, 750, 1000});
  FlushSchedule none(ms(100), ms(0), ms(100), t0);
  CHECK_FALSE(none.take(t0 + ms(100000)));  // period 0: no flush unless asked
}
