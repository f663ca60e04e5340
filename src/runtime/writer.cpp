#include "omnidp/runtime/writer.hpp"

#include <fmt/format.h>
#include <exception>
#include <memory>

#include "omnidp/common/log.hpp"
#include "omnidp/models/model_facts.hpp"
#include "omnidp/runtime/faults.hpp"

namespace omnidp::runtime {

void Writer::run() {
  auto first = c_.writes.pop();
  const auto* open = first ? std::get_if<OpenCmd>(&*first) : nullptr;
  if (open == nullptr) {
    c_.events.push(WriterClosed{});
    return;
  }
  std::unique_ptr<ResultSink> sink;
  bool broken = false;
  try {
    if (!c_.options.make_sink) throw RuntimeError("no result sink factory");
    sink = c_.options.make_sink(SinkInfo{c_.rank, c_.setup.topology.world_size, c_.setup.host,
                                         open->device, c_.config.model.name,
                                         effective_config_yaml(c_.config)});
    sink = with_kill_after_writes(std::move(sink), c_.config.faults, c_.rank);
    c_.events.push(Opened{nullptr});
  } catch (...) {
    c_.events.push(Opened{std::current_exception()});
    broken = true;
  }
  while (auto item = c_.writes.pop()) {
    auto* job = std::get_if<WriteJob>(&*item);
    if (job == nullptr) continue;
    ResultRecord& rec = job->record;
    if (broken) {
      c_.post(0, ReturnedMsg{c_.replica, {rec.id}});
      continue;
    }
    try {
      const double t0 = steady_s();
      if (rec.status == RequestStatus::ok) rec.video_sha256 = video_sha256(job->video);
      const double t1 = steady_s();
      sink->write(rec, rec.status == RequestStatus::ok ? &job->video : nullptr);
      log_debug(fmt::format("writer: '{}' hashed in {:g} s, written in {:g} s", rec.id, t1 - t0,
                            steady_s() - t1));
    } catch (...) {
      broken = true;
      c_.events.push(WriterFailed{error_info(std::current_exception())});
      c_.post(0, ReturnedMsg{c_.replica, {rec.id}});
      continue;
    }
    c_.post(0, DoneMsg{rec.id, rec.status, rec.error, rec.rank, rec.replica, rec.attempt,
                       rec.start_time, rec.end_time, rec.seconds, rec.model_tflop, rec.forwards,
                       rec.forwards_computed});
  }
  if (sink && !broken) {
    try {
      sink->close();
    } catch (...) {
      c_.events.push(WriterFailed{error_info(std::current_exception())});
    }
  }
  c_.events.push(WriterClosed{});
}

}  // namespace omnidp::runtime
