// Work items prepared on several threads and used one by one in their own
// order: `store import` parses and packs run.json files (most of its CPU) on
// every core while one thread writes them to the store in the order given,
// so what it prints and stores does not depend on which thread was first.
#pragma once
#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace flopwatt {

// Calls make(i) for every i in [0, n) on `threads` threads (at least one),
// never more than `ahead` items past the one being used, so memory holds at
// most `ahead` prepared items; calls use(i, item) on the calling thread for
// i = 0, 1, ... in order. A throw from make reaches the caller when its
// item's turn comes; a throw from use stops the threads and reaches the
// caller at once.
template <class T, class Make, class Use>
void ordered_parallel(std::size_t n, unsigned threads, std::size_t ahead, Make make, Use use) {
  struct Slot {
    std::optional<T> item;
    std::exception_ptr error;
    bool ready = false;
  };
  ahead = std::max<std::size_t>(ahead, 1);
  std::vector<Slot> slots(n);
  std::mutex mu;
  std::condition_variable cv;
  std::size_t claimed = 0, used = 0;
  bool stop = false;
  auto work = [&] {
    for (;;) {
      std::size_t i;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stop || claimed >= n || claimed < used + ahead; });
        if (stop || claimed >= n) return;
        i = claimed++;
      }
      Slot s;
      try {
        s.item.emplace(make(i));
      } catch (...) {
        s.error = std::current_exception();
      }
      s.ready = true;
      std::lock_guard lock(mu);
      slots[i] = std::move(s);
      cv.notify_all();
    }
  };
  std::vector<std::thread> pool;
  struct Join {  // on every way out, a throw from use included
    std::vector<std::thread>& pool;
    std::mutex& mu;
    std::condition_variable& cv;
    bool& stop;
    ~Join() {
      {
        std::lock_guard lock(mu);
        stop = true;
      }
      cv.notify_all();
      for (auto& t : pool) t.join();
    }
  } join{pool, mu, cv, stop};
  for (unsigned t = 0; t < std::max(threads, 1u) && t < n; ++t) pool.emplace_back(work);
  for (std::size_t i = 0; i < n; ++i) {
    Slot s;
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return slots[i].ready; });
      s = std::move(slots[i]);
      slots[i] = Slot{};
      used = i + 1;
    }
    cv.notify_all();
    if (s.error) std::rethrow_exception(s.error);
    use(i, std::move(*s.item));
  }
}

}  // namespace flopwatt
