#include "emulators/registry.h"
#include "emulators/emulator_kind.h"

namespace ernic {
namespace {

class NoEmulator final : public EmulatorKind {
 public:
  std::string_view name() const override { return "none"; }
  std::string_view description() const override {
    return "No emulator: hosts bring their own RDMA device (or soft-RoCE), or run TCP tools only";
  }
  const ObjectSchema& schema() const override {
    static const ObjectSchema schema{.description = "", .fields = {}};
    return schema;
  }
  int instance_count(const Config&) const override { return 0; }
  std::vector<std::string> describe(const Config&, const EmulatorContext&) const override {
    return {};
  }
  std::unique_ptr<RunningEmulator> start(const Config&, EmulatorContext&) override {
    return nullptr;
  }
};

}  // namespace

EmulatorKind& no_emulator() {
  static NoEmulator kind;
  return kind;
}

}  // namespace ernic
