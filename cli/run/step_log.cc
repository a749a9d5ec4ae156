#include "run/step_log.h"

#include <fmt/format.h>

#include "base/units.h"

namespace ernic {

class StepLog::RoleSink final : public OutputSink {
 public:
  RoleSink(StepLog* log, std::string role) : log_(log), role_(std::move(role)) {}
  void on_output(OutputStream stream, std::string_view data) override {
    log_->write_lines(role_, stream, data,
                      stream == OutputStream::kStdout ? out_pending_ : err_pending_);
  }
  void flush() {
    for (auto* pending : {&out_pending_, &err_pending_}) {
      if (!pending->empty()) {
        log_->write_lines(role_,
                          pending == &out_pending_ ? OutputStream::kStdout : OutputStream::kStderr,
                          "\n", *pending);
      }
    }
  }
  const std::string& role() const { return role_; }

 private:
  StepLog* log_;
  std::string role_;
  std::string out_pending_;
  std::string err_pending_;
};

StepLog::StepLog(std::filesystem::path path, const std::string& title) : path_(std::move(path)) {
  if (path_.empty()) {
    return;  // a dry run keeps no logs: the stream stays closed and writes go nowhere
  }
  std::filesystem::create_directories(path_.parent_path());
  out_.open(path_, std::ios::out | std::ios::trunc);
  out_ << "# " << title << "\n";
  out_.flush();
}

StepLog::~StepLog() = default;

OutputSink* StepLog::sink(const std::string& role) {
  std::lock_guard lock(mutex_);
  sinks_.push_back(std::make_unique<RoleSink>(this, role));
  return sinks_.back().get();
}

void StepLog::command(const std::string& role, const Host& host, const CommandSpec& spec) {
  std::lock_guard lock(mutex_);
  out_ << fmt::format("# {} on {}\n$ {}\n", role, host.describe(), spec.display());
  out_.flush();
}

void StepLog::result(const std::string& role, const CommandResult& result) {
  for (auto& sink : sinks_) {
    if (sink->role() == role) {
      sink->flush();
    }
  }
  std::lock_guard lock(mutex_);
  out_ << fmt::format("# {} finished: {}, {}\n", role, result.describe(),
                      format_duration(result.duration));
  out_.flush();
}

void StepLog::note(const std::string& text) {
  std::lock_guard lock(mutex_);
  out_ << "# " << text << "\n";
  out_.flush();
}

void StepLog::write_lines(const std::string& role, OutputStream stream, std::string_view data,
                          std::string& pending) {
  std::lock_guard lock(mutex_);
  pending.append(data);
  std::size_t start = 0;
  std::size_t newline;
  const char* label = stream == OutputStream::kStdout ? "out" : "err";
  while ((newline = pending.find('\n', start)) != std::string::npos) {
    out_ << role << ' ' << label << "| " << std::string_view(pending).substr(start, newline - start)
         << '\n';
    start = newline + 1;
  }
  pending.erase(0, start);
  out_.flush();
}

}  // namespace ernic
