// The Python module `flopwatt`: the C++ Meter as a context manager.
//
//   import flopwatt
//   m = flopwatt.Meter()
//   with m.window("step", flop=6 * n_params * tokens) as w:
//       train_step()
//   print(w.energy_j, w.headline, w.headline_why, [s.id for s in w.sources])
//
// The `with` block's exit only closes the window (a clock read: a training
// loop never waits for the sampler); its figures are judged the first time
// one is read, with the GIL released while the meter waits for its samples.
#include <cstdio>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>

#include "flopwatt/meter.h"

namespace py = pybind11;
using flopwatt::Meter;
using flopwatt::WindowResult;

namespace {

// A window as Python sees it: opened by __enter__, closed by __exit__,
// judged when a figure is first read.
struct PyWindow {
  std::shared_ptr<Meter> meter;
  std::string name;
  double flop = 0;
  std::optional<Meter::Window> open;
  std::optional<Meter::Closed> closed;
  std::optional<WindowResult> result;

  const WindowResult& done() {
    if (!result) {
      if (!closed) throw std::runtime_error("flopwatt window '" + name + "' has not ended: read it after the with block");
      WindowResult r;
      {
        py::gil_scoped_release release;
        r = meter->result(*closed);
      }
      // Another thread may have judged it while the GIL was released: same figures.
      if (!result) result = std::move(r);
    }
    return *result;
  }
};

// What a window says at the interpreter: its state, and its figures once
// judged (judging it if it closed).
std::string window_repr(PyWindow& w) {
  if (w.open) return "<flopwatt.Window '" + w.name + "' open>";
  if (!w.closed) return "<flopwatt.Window '" + w.name + "' not entered>";
  const WindowResult& r = w.done();
  char buf[160];
  std::string text = "<flopwatt.Window '" + w.name + "' ";
  std::snprintf(buf, sizeof buf, "%.4g s", r.duration_s);
  text += buf;
  if (r.flop_per_s) std::snprintf(buf, sizeof buf, ", %.4g GFLOP/s", *r.flop_per_s * 1e-9), text += buf;
  if (r.energy_j) {
    std::snprintf(buf, sizeof buf, ", %.4g J, %.4g W", *r.energy_j, r.avg_power_w.value_or(0));
    text += buf;
    if (r.flop_per_j) std::snprintf(buf, sizeof buf, ", %.4g GFLOP/J", *r.flop_per_j * 1e-9), text += buf;
    text += " from " + *r.headline;
  } else {
    text += ", no energy: " + r.headline_why;
  }
  return text + ">";
}

void bind_source_info(py::module_& mod) {
  py::class_<flopwatt::SourceInfo>(mod, "SourceInfo")
      .def_readonly("id", &flopwatt::SourceInfo::id)
      .def_readonly("domain", &flopwatt::SourceInfo::domain)
      .def_readonly("available", &flopwatt::SourceInfo::available)
      .def_readonly("reason", &flopwatt::SourceInfo::reason)
      .def_readonly("fix", &flopwatt::SourceInfo::fix)
      .def("__repr__", [](const flopwatt::SourceInfo& s) {
        return "<flopwatt.SourceInfo " + s.id + " (" + s.domain + ")" + (s.available ? "" : " unavailable: " + s.reason) + ">";
      });
}

void bind_source_figure(py::module_& mod) {
  py::class_<flopwatt::SourceFigure>(mod, "SourceFigure")
      .def_readonly("id", &flopwatt::SourceFigure::id)
      .def_readonly("domain", &flopwatt::SourceFigure::domain)
      .def_readonly("energy_j", &flopwatt::SourceFigure::energy_j)
      .def_readonly("avg_power_w", &flopwatt::SourceFigure::avg_power_w)
      .def_readonly("flop_per_j", &flopwatt::SourceFigure::flop_per_j)
      .def_readonly("low_confidence", &flopwatt::SourceFigure::low_confidence)
      .def_readonly("why_low", &flopwatt::SourceFigure::why_low)
      .def_readonly("gap", &flopwatt::SourceFigure::gap)
      .def("__repr__", [](const flopwatt::SourceFigure& s) {
        return "<flopwatt.SourceFigure " + s.id + " " + std::to_string(s.energy_j) + " J>";
      });
}

void bind_window(py::module_& mod) {
  py::class_<PyWindow, std::shared_ptr<PyWindow>>(mod, "Window")
      .def("__enter__", [](std::shared_ptr<PyWindow> w) {
        if (w->open || w->closed) throw std::runtime_error("flopwatt window '" + w->name + "' was already used");
        w->open = w->meter->begin(w->name);
        return w;
      })
      .def("__exit__", [](PyWindow& w, py::object, py::object, py::object) {
        if (!w.open) return false;
        w.closed = w.meter->close(*w.open, w.flop);
        w.open.reset();
        return false;  // an exception in the block propagates
      })
      .def_readonly("name", &PyWindow::name)
      .def_property_readonly("duration_s", [](PyWindow& w) { return w.done().duration_s; })
      .def_property_readonly("flop", [](PyWindow& w) { return w.done().flop; })
      .def_property_readonly("flop_per_s", [](PyWindow& w) { return w.done().flop_per_s; })
      .def_property_readonly("energy_j", [](PyWindow& w) { return w.done().energy_j; })
      .def_property_readonly("avg_power_w", [](PyWindow& w) { return w.done().avg_power_w; })
      .def_property_readonly("flop_per_j", [](PyWindow& w) { return w.done().flop_per_j; })
      .def_property_readonly("headline", [](PyWindow& w) { return w.done().headline; })
      .def_property_readonly("headline_why", [](PyWindow& w) { return w.done().headline_why; })
      .def_property_readonly("supply", [](PyWindow& w) { return w.done().supply; })
      .def_property_readonly("notes", [](PyWindow& w) { return w.done().notes; })
      .def_property_readonly("sources", [](PyWindow& w) { return w.done().sources; })
      .def("__repr__", &window_repr);
}

std::shared_ptr<Meter> make_meter(const std::string& power, const std::string& sysfs_root, const std::string& power_log,
                                  double sample_period_s, const std::string& headline_domain, double history_s,
                                  const std::string& pushgateway, const std::string& machine, const std::string& run_id,
                                  double push_timeout_s) {
  flopwatt::MeterOptions o;
  o.power = power;
  o.sysfs_root = sysfs_root;
  o.power_log = power_log;
  o.sample_period_s = sample_period_s;
  o.headline_domain = headline_domain;
  o.history_s = history_s;
  o.pushgateway = pushgateway;
  o.machine = machine;
  o.run_id = run_id;
  o.push_timeout_s = push_timeout_s;
  return std::make_shared<Meter>(o);
}

void bind_meter(py::module_& mod) {
  py::class_<Meter, std::shared_ptr<Meter>>(mod, "Meter")
      .def(py::init(&make_meter), py::arg("power") = "auto", py::arg("sysfs_root") = "", py::arg("power_log") = "",
           py::arg("sample_period_s") = 0.010, py::arg("headline_domain") = "", py::arg("history_s") = 3600.0,
           py::arg("pushgateway") = "", py::arg("machine") = "", py::arg("run_id") = "", py::arg("push_timeout_s") = 5.0)
      .def_property_readonly("run_id", &Meter::run_id)
      .def_property_readonly("active", &Meter::active)
      .def_property_readonly("sources", &Meter::sources)
      .def_property_readonly("headline_source", &Meter::headline_source)
      .def("__repr__", [](const Meter& m) {
        std::string avail;
        for (const auto& s : m.sources())
          if (s.available) avail += (avail.empty() ? "" : ", ") + s.id;
        return "<flopwatt.Meter " + (avail.empty() ? std::string("no power source (time only)") : "sampling " + avail) +
               ">";
      })
      .def(
          "window",
          [](std::shared_ptr<Meter> m, const std::string& name, double flop) {
            auto w = std::make_shared<PyWindow>();
            w->meter = std::move(m);
            w->name = name;
            w->flop = flop;
            return w;
          },
          py::arg("name"), py::arg("flop") = 0.0,
          "A window to use in a with block; its figures are read after the block");
}

}  // namespace

PYBIND11_MODULE(flopwatt, mod) {
  mod.doc() = "flopwatt: time and energy of named windows of your code, with flopwatt's headline rule";
  mod.attr("__version__") = flopwatt::version();
  bind_source_info(mod);
  bind_source_figure(mod);
  bind_window(mod);
  bind_meter(mod);
}
