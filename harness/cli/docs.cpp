#include "harness/cli/docs.h"

#include <functional>
#include <sstream>
#include <vector>

namespace flopwatt {

namespace {

// roff: a leading '.' or '\'' would be a request, a backslash an escape, '-' a hyphen.
std::string roff(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '\\') o += "\\e";
    else if (c == '-') o += "\\-";
    else o += c;
  }
  if (!o.empty() && (o[0] == '.' || o[0] == '\'')) o.insert(0, "\\&");
  return o;
}

std::vector<const CLI::App*> commands(const CLI::App& app) {
  std::vector<const CLI::App*> v;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) v.push_back(s);
  return v;
}

std::string option_names(const CLI::Option& o) {
  std::string n;
  for (const auto& s : o.get_snames()) n += (n.empty() ? "-" : ", -") + s;
  for (const auto& l : o.get_lnames()) n += (n.empty() ? "--" : ", --") + l;
  if (n.empty()) n = o.get_name();  // a positional
  const std::string type = o.get_type_name();
  if (o.get_type_size() != 0 && !type.empty()) n += " " + type;
  return n;
}

void man_options(std::ostringstream& m, const CLI::App& a) {
  for (const CLI::Option* o : a.get_options()) {
    if (o->get_group().empty()) continue;  // hidden
    m << ".TP\n.B " << roff(option_names(*o)) << "\n" << roff(o->get_description()) << "\n";
  }
}

void man_commands(std::ostringstream& m, const CLI::App& a, const std::string& prefix) {
  for (const CLI::App* s : commands(a)) {
    if (s->get_group().empty()) continue;
    const std::string name = prefix + s->get_name();
    m << ".SS " << roff(name) << "\n" << roff(s->get_description()) << "\n";
    man_options(m, *s);
    man_commands(m, *s, name + " ");
  }
}

}  // namespace

std::string man_page(const CLI::App& app, const std::string& version) {
  std::ostringstream m;
  m << ".TH FLOPWATT 1 \"\" \"flopwatt " << roff(version) << "\" \"User Commands\"\n"
    << ".SH NAME\nflopwatt \\- FLOP/s and FLOP/J of ML training and of any program, with a stated headline rule\n"
    << ".SH SYNOPSIS\n.B flopwatt\n.I command\n[\\fIoptions\\fR]\n"
    << ".SH DESCRIPTION\n" << roff(app.get_description()) << "\n"
    << ".SH OPTIONS\n";
  man_options(m, app);
  m << ".SH COMMANDS\n";
  man_commands(m, app, "flopwatt ");
  m << ".SH EXIT STATUS\n0 on success; 2 for bad input (one line naming the flag, file or field, and the fix); "
       "3 when \\fBcompare \\-\\-fail\\-on\\-regression\\fR finds one; \\fBmeasure\\fR passes its program's status "
       "through.\n"
    << ".SH ENVIRONMENT\n.TP\n.B FLOPWATT_SYSFS_ROOT\nRoot for /sys, /dev and /proc reads (as \\-\\-sysfs\\-root).\n"
    << ".TP\n.B FLOPWATT_STORE\nThe results store (a SQLite file or a postgresql:// connection string).\n"
    << ".TP\n.B XDG_CACHE_HOME\nMeasured peaks are kept in $XDG_CACHE_HOME/flopwatt/peaks (else ~/.cache).\n";
  return m.str();
}

std::string bash_completion(const CLI::App& app) {
  // One case per command path: the words a user may type next there.
  std::ostringstream cases, known;
  std::function<void(const CLI::App&, const std::string&)> walk = [&](const CLI::App& a, const std::string& path) {
    std::string words;
    for (const CLI::App* s : commands(a))
      if (!s->get_group().empty()) words += s->get_name() + " ";
    for (const CLI::Option* o : a.get_options()) {
      if (o->get_group().empty()) continue;
      for (const auto& l : o->get_lnames()) words += "--" + l + " ";
      for (const auto& s : o->get_snames()) words += "-" + s + " ";
    }
    cases << "    \"" << path << "\") words=\"" << words << "\" ;;\n";
    if (!path.empty()) known << " [\"" << path << "\"]=1";
    for (const CLI::App* s : commands(a))
      if (!s->get_group().empty()) walk(*s, path.empty() ? s->get_name() : path + " " + s->get_name());
  };
  walk(app, "");
  std::ostringstream b;
  b << "# bash completion for flopwatt, written by `flopwatt --help-bash-completion` from its option tables\n"
    << "_flopwatt() {\n"
    << "  local cur=${COMP_WORDS[COMP_CWORD]} path=\"\" w i\n"
    << "  local -A known=(" << known.str() << " )\n"
    << "  # The command path: the words before the cursor that are not options or their values.\n"
    << "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
    << "    w=${COMP_WORDS[i]}\n"
    << "    [[ $w == -* ]] && continue\n"
    << "    [[ -n ${known[\"${path:+$path }$w\"]} ]] && path=\"${path:+$path }$w\"\n"
    << "  done\n"
    << "  local words\n"
    << "  case \"$path\" in\n"
    << cases.str()
    << "    *) words=\"\" ;;\n"
    << "  esac\n"
    << "  if [[ $cur == -* || -n $words ]]; then COMPREPLY=($(compgen -W \"$words\" -- \"$cur\")); fi\n"
    << "  [[ ${#COMPREPLY[@]} -eq 0 ]] && COMPREPLY=($(compgen -f -- \"$cur\"))\n"
    << "}\n"
    << "complete -F _flopwatt flopwatt\n";
  return b.str();
}

}  // namespace flopwatt
