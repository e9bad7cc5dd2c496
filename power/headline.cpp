#include "power/headline.h"

#include "power/aliases.h"

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
         "package (summed over sockets), then battery (summed over batteries); a battery only while it is "
         "discharging for the whole window; a sum replaces its parts; if no source has adequate "
         "confidence, the widest one with energy, marked low confidence";
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

  std::vector<const HeadlineCandidate*> ok;
  std::vector<std::string> passed;
  for (const auto& c : cands) {
    if (!only_domain.empty() && c.domain != only_domain) continue;
    if (!c.has_energy) {
      passed.push_back(c.id + ": no energy for this window");
      continue;
    }
    if (c.domain == "battery" && c.charge != ChargeState::Discharging) {
      passed.push_back(c.id + ": " + to_string(c.charge) +
                       (c.charge == ChargeState::Charging ? ", so it measures the power going into the battery"
                                                          : ", so it does not measure the machine's draw"));
      continue;
    }
    if (const auto* s = part_of(c)) {
      passed.push_back(c.id + ": part of " + s->id);
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
    return std::make_tuple(c->low_confidence, tier(c->domain), !c->summed, rapl_view_rank(c->id), battery_view, c->id);
  };
  std::sort(ok.begin(), ok.end(), [&](auto* a, auto* b) { return key(a) < key(b); });

  auto join_passed = [&] {
    std::string s;
    for (const auto& p : passed) s += (s.empty() ? "" : "; ") + p;
    return s;
  };
  if (ok.empty()) {
    out.why = passed.empty() ? "no source" : "no source qualifies: " + join_passed();
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
      passed.push_back(c->id + ": low confidence" + (c->why_low.empty() ? "" : " (" + c->why_low + ")"));
  if (!passed.empty()) out.why += "; passed over: " + join_passed();
  return out;
}

}  // namespace flopwatt::power
