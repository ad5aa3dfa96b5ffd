// proc::PassThrough: hands each event to the tools unchanged, with no
// correlation. For handlers whose events arrive already correlated, and as
// the baseline that shows what correlation costs.
#pragma once

#include <string_view>

namespace pasta::proc {

struct PassThrough {
  template <class Next, class E>
  static constexpr bool wants() {
    return Next::template wants<E>();
  }
  template <class Next, class E>
  void on(const E& e, Next& next) {
    next.emit(e);
  }
};

}  // namespace pasta::proc
