// The four tools of bench/dispatch called by hand: the tools' own cost,
// without the pasta pipeline around them.
#include <pasta/tools/event_count.hpp>
#include <pasta/tools/kernel_freq.hpp>
#include <pasta/tools/mem_hotness.hpp>
#include <pasta/tools/scope_time.hpp>

struct Tools {
  pasta::tools::KernelFreq freq;
  pasta::tools::MemHotness hot;
  pasta::tools::EventCount count;
  pasta::tools::ScopeTime scopes;
};

int main() {
  Tools t;
  t.freq.on(pasta::KernelLaunch{.correlation = 1});
  t.count.on(pasta::KernelLaunch{.correlation = 1});
  t.freq.on(pasta::KernelComplete{.correlation = 1});
  t.hot.on(pasta::MemAlloc{.address = 64, .bytes = 64});
  t.hot.on(pasta::MemAccess{.address = 64, .alloc_base = 64, .bytes = 4});
  t.scopes.on(pasta::ScopeBegin{});
  t.scopes.on(pasta::ScopeEnd{});
  pasta::Report r("x");
  t.freq.report(r);
  t.hot.report(r);
  t.count.report(r);
  t.scopes.report(r);
  return static_cast<int>(r.tables().size());
}
