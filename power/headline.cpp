#include "power/headline.h"

#include "power/aliases.h"
#include "power/number_text.h"

#include <algorithm>
#include <tuple>

namespace flopwatt::power {

const char* to_string(ChargeState s) {
  switch (s) {
    case ChargeState::NotBattery: return "not a battery";
    case ChargeState::Discharging: return "discharging";
    case ChargeState::Charging: return "charging";
    case ChargeState::Idle: return "idle (full or not charging)";
    case ChargeState::Changed: return "changed during the window";
    default: return "unknown";
  }
}

const char* headline_rule_text() {
  return "widest domain whose confidence is adequate for the window: external wall meter, then psys, then "
         "package (summed over sockets), then battery (summed over batteries); a battery only while the "
         "machine runs from it alone (discharging for the whole window with no adapter online); a sum "
         "replaces its parts; never a figure that fails the physics checks (a wall, psys, package or battery "
         "domain under load below 0.5 W or any domain above 2000 W, a counter that does not advance, FLOP/J "
         "above 1e12 for a CPU or 1e13 for an NPU or GPU); never a device beside the one that did the work (a "
         "discrete GPU's board, a drive, a platform sensor or an unknown device for CPU work); if no source has adequate confidence, the widest usable "
         "one, marked low confidence";
}

DeviceClass device_class_of_backend(const std::string& backend) {
  if (backend.rfind("npu:", 0) == 0) return DeviceClass::Npu;
  if (backend.rfind("gpu:", 0) == 0) return DeviceClass::Gpu;
  return DeviceClass::Cpu;
}

bool domain_measures(const std::string& domain, DeviceClass device) {
  if (domain == "gpu") return device == DeviceClass::Gpu;
  return domain != "storage" && domain != "platform" && domain != "device";
}

namespace {

std::string watts(double w) { return text(g3(w), " W"); }

bool whole_or_package(const std::string& domain) {
  return domain == "wall" || domain == "psys" || domain == "package" || domain == "battery";
}

}  // namespace

Usability figure_usability(const HeadlineCandidate& c) {
  auto no = [](std::string why) { return Usability{false, std::move(why)}; };
  if (!c.has_energy) return no("no energy for this window");
  if (!domain_measures(c.domain, c.device)) {
    const char* work = c.device == DeviceClass::Npu ? "NPU" : c.device == DeviceClass::Gpu ? "GPU" : "CPU";
    if (c.domain == "gpu") return no(std::string("a discrete GPU's power, not the ") + work + "'s work");
    return no(std::string("a ") + (c.domain == "storage" ? "drive's" : c.domain == "platform" ? "platform sensor's" : "device's") +
              " power: what it meters is not the " + work + "'s work");
  }
  if (c.domain == "battery") {
    // Documentation/ABI/testing/sysfs-class-power: a battery's power_now and
    // current_now are its own flow; with an adapter online that is at most the
    // part of the draw the charger does not cover, not the machine's draw.
    if (c.charge != ChargeState::Discharging)
      return no(std::string(to_string(c.charge)) +
                (c.charge == ChargeState::Charging ? ", so it measures the power going into the battery"
                                                   : ", so it does not measure the machine's draw"));
    if (c.on_mains.value_or(false))
      return no("discharging while the adapter is online: the battery covers only what the charger does not, a "
                "partial draw (recorded, never FLOP/J)");
  }
  if (c.avg_power_w) {
    const double w = *c.avg_power_w;
    if (c.under_load && whole_or_package(c.domain) && w <= 0)
      return no("does not advance: a VM or a disabled counter (no energy under load)");
    if (c.under_load && whole_or_package(c.domain) && w < kLoadFloorW)
      return no(watts(w) + " under load is below the 0.5 W a " + c.domain +
                " domain draws: a unit error (mW read as uW?) or a counter that barely moves");
    // No domain draws nothing under load: 0 J is a counter that did not move
    // within the window (shorter than its update step, or dead). Narrow
    // domains have no floor, but 0 J is no figure for them either.
    if (c.under_load && w <= 0) return no("0 J over the window: the counter did not move (a window shorter than its update step?)");
    if (w > kDomainCeilingW)
      return no(watts(w) + " is above the 2000 W no client machine draws through one domain: a unit error");
  }
  if (c.flop_per_j) {
    // A GPU is held to the NPU's bound: accelerators at low precision reach
    // about a TFLOP/J, an order of magnitude below it.
    const double bound = c.device == DeviceClass::Cpu ? kMaxFlopPerJCpu : kMaxFlopPerJNpu;
    if (*c.flop_per_j > bound)
      return no(text(g3(*c.flop_per_j), " FLOP/J is past the ", e0(bound), " FLOP/J no ",
                     c.device == DeviceClass::Npu ? "NPU" : c.device == DeviceClass::Gpu ? "GPU" : "CPU",
                     " reaches: a unit or counter error"));
  }
  return {};
}

namespace {

// Wider domains contain narrower ones. A battery, although it feeds the whole
// machine, comes after psys and package: its gauge updates every 1-15 s, so a
// short window gets a better figure from a 1 ms counter.
int tier(const std::string& domain) {
  static const char* order[] = {"wall", "psys", "package", "battery", "npu", "core", "uncore", "dram", "one-core"};
  for (int i = 0; i < int(std::size(order)); ++i)
    if (domain == order[i]) return i;
  return 100;
}

}  // namespace

HeadlineChoice choose_headline(const std::vector<HeadlineCandidate>& cands, const std::string& only_domain) {
  HeadlineChoice out;
  out.rule = headline_rule_text();
  if (!only_domain.empty()) out.rule = "only domain " + only_domain + " (--headline-domain); " + out.rule;

  std::vector<const HeadlineCandidate*> sums;
  for (const auto& c : cands)
    if (c.summed && c.has_energy) sums.push_back(&c);
  auto part_of = [&](const HeadlineCandidate& c) -> const HeadlineCandidate* {
    for (const auto* s : sums)
      if (std::find(s->parts.begin(), s->parts.end(), c.id) != s->parts.end()) return s;
    return nullptr;
  };

  out.usability.reserve(cands.size());
  for (const auto& c : cands) out.usability.push_back(figure_usability(c));
  std::vector<const HeadlineCandidate*> ok;
  ok.reserve(cands.size());
  std::string passed;  // "id: why; id: why", built in place: every window judged writes it
  auto pass = [&](const auto&... parts) { append_text(passed, passed.empty() ? "" : "; ", parts...); };
  for (std::size_t i = 0; i < cands.size(); ++i) {
    const HeadlineCandidate& c = cands[i];
    if (!only_domain.empty() && c.domain != only_domain) continue;
    if (const Usability& u = out.usability[i]; !u.usable) {
      pass(c.id, ": ", u.why);
      continue;
    }
    if (const auto* s = part_of(c)) {
      pass(c.id, ": part of ", s->id);
      continue;
    }
    ok.push_back(&c);
  }
  auto key = [](const HeadlineCandidate* c) {
    // Same domain twice (powercap package next to an APU's PPT): the RAPL
    // view the alias rule prefers; a battery's power_now gauge before its
    // energy_now-delta estimate (coarser: whole uWh steps every few seconds);
    // then the id, so the choice is stable.
    const int battery_view = c->id.rfind("battery-energy:", 0) == 0 ? 1 : 0;
    return std::tuple<bool, int, bool, int, int, const std::string&>(c->low_confidence, tier(c->domain), !c->summed,
                                                                     rapl_view_rank(c->id), battery_view, c->id);
  };
  std::sort(ok.begin(), ok.end(), [&](auto* a, auto* b) { return key(a) < key(b); });

  if (ok.empty()) {
    out.why = passed.empty() ? "no source" : "no source qualifies: " + passed;
    return out;
  }
  const HeadlineCandidate& best = *ok.front();
  out.source = best.id;
  if (ok.size() > 1) out.runner_up = ok[1]->id;
  out.low_confidence = best.low_confidence;
  out.why = best.id + ": " + (best.low_confidence ? "no source had adequate confidence; widest with energy ("
                                                     + (best.why_low.empty() ? std::string("low confidence")
                                                                             : best.why_low) + ")"
                                                  : "widest domain (" + best.domain + ") with adequate confidence");
  // Wider sources that lost only on confidence belong in the explanation too.
  for (const auto* c : ok)
    if (c != &best && c->low_confidence && !best.low_confidence && tier(c->domain) < tier(best.domain))
      c->why_low.empty() ? pass(c->id, ": low confidence") : pass(c->id, ": low confidence (", c->why_low, ")");
  if (!passed.empty()) append_text(out.why, "; passed over: ", passed);
  return out;
}

}  // namespace flopwatt::power
