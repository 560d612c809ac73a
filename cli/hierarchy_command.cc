#include "cli/hierarchy_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/hierarchies/hierarchy_builder.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/csv.h"

namespace fedanon::cli {
namespace {

constexpr char kCentralizedNote[] =
    "built from the values of a table: use it for centralized jobs only (a federated job takes "
    "hierarchies built from public definitions: docs/hierarchies.md)";

// The options every kind subcommand shares: where the leaves come from and where the text goes.
struct KindFlags {
  fedanon::v1::HierarchyDefinition definition;
  std::string values_file;
  std::string input;
  std::string column;
  std::string missing_token = "?";
  std::string out;
  bool force = false;
  // Kind-specific storage CLI11 fills before the definition is assembled.
  std::vector<uint32_t> fanout, masked;
  std::vector<std::string> levels, order;
  std::string order_file;
};

// Writes `text` to `path` unless an identical file is there; a different file only with `force`.
absl::StatusOr<std::string> WriteHierarchy(const std::string& path, const std::string& text,
                                           bool force) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    absl::StatusOr<std::string> existing =
        ReadFile(path, base::ReadFileOptions{.what = "hierarchy"});
    if (existing.ok() && *existing == text) return std::string("unchanged");
    if (!force) {
      return absl::AlreadyExistsError(
          absl::StrCat(path,
                       " exists and differs from the built hierarchy; use --force to "
                       "replace it"));
    }
  }
  RETURN_IF_ERROR(table::WriteFileAtomically(path, text));
  return std::string("written");
}

std::string Summary(const std::string& path, const std::string& text, const std::string& what) {
  const hierarchies::HierarchyShape shape = hierarchies::ShapeOf(text);
  return absl::StrCat(path, ": ", shape.leaves, " values, ", shape.levels, " levels above them (",
                      what, ")\n");
}

absl::Status RunKind(KindFlags flags, fedanon::v1::HierarchyDefinition::KindCase kind) {
  fedanon::v1::HierarchyDefinition& d = flags.definition;
  d.set_attribute(flags.column.empty() ? std::filesystem::path(flags.out).stem().string()
                                       : flags.column);
  switch (kind) {
    case fedanon::v1::HierarchyDefinition::kInterval:
      for (uint32_t f : flags.fanout) d.mutable_interval()->add_fanout(f);
      break;
    case fedanon::v1::HierarchyDefinition::kMasking:
      for (uint32_t m : flags.masked) d.mutable_masking()->add_masked(m);
      break;
    case fedanon::v1::HierarchyDefinition::kDate:
      for (const std::string& level : flags.levels) {
        fedanon::v1::DateLevel value;
        std::string upper = "DATE_LEVEL_" + level;
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        if (!fedanon::v1::DateLevel_Parse(upper, &value)) {
          return server::UsageError(absl::StrCat("unknown date level '", level,
                                                 "' (month, quarter, year, decade, century)"));
        }
        d.mutable_date()->add_levels(value);
      }
      break;
    case fedanon::v1::HierarchyDefinition::kOrdered: {
      if (flags.order.empty() == flags.order_file.empty()) {
        return server::UsageError("give the order with exactly one of --order and --order-file");
      }
      std::vector<std::string> order = flags.order;
      if (!flags.order_file.empty()) {
        ASSIGN_OR_RETURN(const hierarchies::ValueList listed,
                         hierarchies::ReadValuesFile(flags.order_file));
        for (const auto& [value, where] : listed.values) order.push_back(value);
      }
      for (const std::string& v : order) d.mutable_ordered()->add_order(v);
      for (uint32_t f : flags.fanout) d.mutable_ordered()->add_fanout(f);
      break;
    }
    default:
      break;
  }
  if (!flags.values_file.empty() && !flags.input.empty()) {
    return server::UsageError("give --values or --input, not both");
  }
  if (flags.input.empty() != flags.column.empty()) {
    return server::UsageError("--input and --column go together");
  }
  RETURN_IF_ERROR(hierarchies::ValidateHierarchyDefinition(d));
  std::optional<hierarchies::ValueList> values;
  if (!flags.values_file.empty()) {
    ASSIGN_OR_RETURN(values, hierarchies::ReadValuesFile(flags.values_file));
  } else if (!flags.input.empty()) {
    ASSIGN_OR_RETURN(values,
                     hierarchies::ReadColumnValues(flags.input, flags.column, flags.missing_token));
  }
  ASSIGN_OR_RETURN(const std::string text,
                   BuildHierarchyText(d, values.has_value() ? &*values : nullptr));
  ASSIGN_OR_RETURN(const std::string outcome, WriteHierarchy(flags.out, text, flags.force));
  std::cout << Summary(flags.out, text, outcome);
  if (!flags.input.empty()) std::cerr << "fedanon hierarchy: note: " << kCentralizedNote << "\n";
  return absl::OkStatus();
}

struct SpecFlags {
  std::string spec;
  std::vector<std::string> attributes;
  std::string input;
  bool force = false;
  bool check = false;
};

absl::Status RunSpec(const SpecFlags& flags) {
  ASSIGN_OR_RETURN(const fedanon::v1::JobSpec spec, spec::LoadJobSpec(flags.spec));
  RETURN_IF_ERROR(spec::ValidateJobSpec(spec));
  if (spec.hierarchy().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flags.spec, " has no hierarchy section to build from"));
  }
  const bool federated = spec.partitioning() != fedanon::v1::PARTITIONING_UNSPECIFIED;
  if (!flags.input.empty() && federated) {
    return absl::FailedPreconditionError(
        "this spec is a federated job (partitioning is set): its hierarchies are built from "
        "the public definitions of the spec's hierarchy section only, never from a table "
        "(which would shape every party's hierarchy by one party's values); drop --input");
  }
  std::map<std::string, std::string> taxonomy_of;
  for (const auto& a : spec.attributes()) taxonomy_of[a.name()] = a.taxonomy();
  int done = 0;
  for (const fedanon::v1::HierarchyDefinition& d : spec.hierarchy()) {
    if (!flags.attributes.empty() && std::find(flags.attributes.begin(), flags.attributes.end(),
                                               d.attribute()) == flags.attributes.end()) {
      continue;
    }
    ++done;
    std::string text;
    if (flags.input.empty()) {
      ASSIGN_OR_RETURN(text, hierarchies::BuildFromDefinition(d));
    } else {
      hierarchies::ValueList values;
      if (!d.values().empty()) {
        ASSIGN_OR_RETURN(values, hierarchies::ReadValuesFile(d.values()));
      } else {
        ASSIGN_OR_RETURN(values, hierarchies::ReadColumnValues(flags.input, d.attribute(),
                                                               spec.missing_token()));
      }
      ASSIGN_OR_RETURN(text, BuildHierarchyText(d, &values));
    }
    const std::string& path = taxonomy_of[d.attribute()];
    if (flags.check) {
      absl::StatusOr<std::string> existing =
          ReadFile(path, base::ReadFileOptions{.what = "taxonomy"});
      if (!existing.ok() || *existing != text) {
        return absl::FailedPreconditionError(absl::StrCat(
            path, " (attribute '", d.attribute(), "') ",
            existing.ok() ? "differs from" : "is missing, unlike",
            " what the spec's definition builds: run fedanon hierarchy spec --spec ", flags.spec));
      }
      std::cout << Summary(path, text, "up to date");
      continue;
    }
    ASSIGN_OR_RETURN(const std::string outcome, WriteHierarchy(path, text, flags.force));
    std::cout << Summary(path, text, outcome);
  }
  if (done == 0) {
    return absl::InvalidArgumentError(absl::StrCat("no hierarchy for ",
                                                   absl::StrJoin(flags.attributes, ", "),
                                                   " in the spec's hierarchy section"));
  }
  if (!flags.input.empty()) std::cerr << "fedanon hierarchy: note: " << kCentralizedNote << "\n";
  return absl::OkStatus();
}

// The options every kind shares.
void AddKindOptions(CLI::App* sub, KindFlags* f) {
  sub->add_option("--values", f->values_file,
                  "A file listing the values, one per line (a public list)");
  sub->add_option("--input", f->input,
                  "Take the values from this table (CSV; centralized jobs only) ...");
  sub->add_option("--column", f->column, "... from this column (also the attribute's name)");
  sub->add_option("--missing-token", f->missing_token,
                  "With --input: the value that stands for a missing one (skipped; default ?)");
  sub->add_option("--out", f->out, "Where to write the hierarchy (ARX CSV)")->required();
  sub->add_flag("--force", f->force, "Replace an existing, different file");
}

}  // namespace

server::CommandAction DeclareHierarchyCommand(CLI::App* command) {
  using Kind = fedanon::v1::HierarchyDefinition;
  command->require_subcommand(1);
  struct Sub {
    CLI::App* app;
    std::shared_ptr<KindFlags> flags;
    Kind::KindCase kind;
  };
  auto subs = std::make_shared<std::vector<Sub>>();

  auto interval = std::make_shared<KindFlags>();
  CLI::App* i = command->add_subcommand(
      "interval", "Numbers into intervals [lo-hi) of a width, joined --fanout at a time per level");
  auto* id = interval->definition.mutable_interval();
  i->add_option_function<double>(
       "--min", [id](double v) { id->set_min(v); }, "Lowest value")
      ->required();
  i->add_option_function<double>(
       "--max", [id](double v) { id->set_max(v); }, "End of the range (values < max)")
      ->required();
  i->add_option_function<double>(
       "--width", [id](double v) { id->set_width(v); }, "Width of the first level's intervals")
      ->required();
  i->add_option("--fanout", interval->fanout, "Intervals joined per higher level, e.g. 2,2")
      ->delimiter(',');
  i->add_option_function<double>(
      "--step", [id](double v) { id->set_step(v); },
      "Leaves min, min+step, ... < max (instead of listed values)");
  AddKindOptions(i, interval.get());
  subs->push_back({i, interval, Kind::kInterval});

  auto masking = std::make_shared<KindFlags>();
  CLI::App* m = command->add_subcommand(
      "masking", "Codes of a fixed length masked from the right (47677 -> 4767* -> 476** ...)");
  auto* md = masking->definition.mutable_masking();
  m->add_option_function<uint32_t>(
       "--length", [md](uint32_t v) { md->set_length(v); },
       "Characters per code (a code of another length is refused)")
      ->required();
  m->add_option("--masked", masking->masked,
                "Characters masked at each level, increasing (default 1,2,...,length)")
      ->delimiter(',');
  m->add_option_function<std::string>(
      "--mask", [md](const std::string& v) { md->set_mask(v); },
      "The masking character (default *)");
  m->add_option_function<std::string>(
      "--alphabet", [md](const std::string& v) { md->set_alphabet(v); },
      "Every code of --length over these characters (instead of listed values)");
  AddKindOptions(m, masking.get());
  subs->push_back({m, masking, Kind::kMasking});

  auto date = std::make_shared<KindFlags>();
  CLI::App* dt =
      command->add_subcommand("date", "Days generalized to month, quarter, year, decade, century");
  auto* dd = date->definition.mutable_date();
  dt->add_option("--levels", date->levels, "Levels, finest first: month,year,decade")
      ->delimiter(',')
      ->required();
  dt->add_option_function<std::string>(
      "--format", [dd](const std::string& v) { dd->set_format(v); },
      "How dates are written: %Y, %m, %d and literal characters (default %Y-%m-%d)");
  dt->add_option_function<std::string>(
      "--from", [dd](const std::string& v) { dd->set_from(v); }, "Every day from this one ...");
  dt->add_option_function<std::string>(
      "--to", [dd](const std::string& v) { dd->set_to(v); },
      "... to this one (inclusive), instead of listed values");
  AddKindOptions(dt, date.get());
  subs->push_back({dt, date, Kind::kDate});

  auto ordered = std::make_shared<KindFlags>();
  CLI::App* o = command->add_subcommand(
      "ordered", "Categories in a given order grouped into runs of --fanout per level");
  o->add_option("--order", ordered->order, "The values in order, e.g. low,mid,high")
      ->delimiter(',');
  o->add_option("--order-file", ordered->order_file, "The values in order, one per line");
  o->add_option("--fanout", ordered->fanout, "Run length per level, e.g. 2,2")
      ->delimiter(',')
      ->required();
  AddKindOptions(o, ordered.get());
  subs->push_back({o, ordered, Kind::kOrdered});

  auto spec = std::make_shared<SpecFlags>();
  CLI::App* s = command->add_subcommand(
      "spec",
      "Build every hierarchy of a spec's hierarchy section and write it to its attribute's "
      "taxonomy path");
  s->add_option("--spec", spec->spec, "The job spec (YAML)")->required();
  s->add_option("--attribute", spec->attributes, "Only these attributes (repeatable)");
  s->add_option("--input", spec->input,
                "Take values the definitions do not give from this table's columns (centralized "
                "jobs only; refused for a federated spec)");
  s->add_flag("--force", spec->force, "Replace existing, different files");
  s->add_flag("--check", spec->check, "Only check that the files equal what the spec builds");

  return [subs, spec, s] {
    if (s->parsed()) return server::ExitCode(RunSpec(*spec), "fedanon hierarchy spec");
    for (const Sub& sub : *subs) {
      if (sub.app->parsed()) {
        return server::ExitCode(RunKind(*sub.flags, sub.kind),
                                absl::StrCat("fedanon hierarchy ", sub.app->get_name()));
      }
    }
    return server::kExitUsage;
  };
}

}  // namespace fedanon::cli
