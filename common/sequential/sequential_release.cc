#include "common/sequential/sequential_release.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/base/string_views.h"
#include "common/spec/sequential_spec.h"
#include "common/table/csv.h"

namespace fedanon::sequential {
namespace {

using ::fedanon::v1::JobSpec;
using Ref = spec::SequentialRef;
using Side = spec::SequentialSide;
constexpr std::string_view kRecord = spec::kSequentialRecord;

absl::StatusOr<Ref> ParseRef(const std::string& text, const std::string& where) {
  return spec::ParseSequentialRef(text, where);
}

std::string TemplateWhere(bool anonymity, int i) {
  return spec::SequentialTemplateWhere(anonymity, i);
}

const fedanon::v1::Attribute* FindAttribute(const JobSpec& spec, const std::string& name) {
  for (const auto& a : spec.attributes()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int FindQid(const table::Dataset& data, const std::string& name) {
  for (size_t i = 0; i < data.qids.size(); ++i) {
    if (data.qids[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// Resolves names against the current and the previous releases while loading. Previous
// releases are numbered from 1 in the order given.
class Resolver {
 public:
  Resolver(const JobSpec& spec, const table::Dataset& data,
           const std::vector<std::vector<std::string>>& previous_headers, SequentialModel* model)
      : spec_(spec), data_(data), headers_(previous_headers), model_(model) {}

  int releases() const { return static_cast<int>(headers_.size()); }
  bool several() const { return headers_.size() > 1; }
  const std::string& PathOf(int release) const { return model_->previous_paths[release - 1]; }
  // The column of previous release `release` (1-based) named `name`, or -1.
  int PreviousCsvColumn(const std::string& name, int release = 1) const {
    const std::vector<std::string>& header = headers_[release - 1];
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
  // The previous releases (1-based) that have a column `name`.
  std::vector<int> ReleasesWith(const std::string& name) const {
    std::vector<int> out;
    for (int r = 1; r <= releases(); ++r) {
      if (PreviousCsvColumn(name, r) >= 0) out.push_back(r);
    }
    return out;
  }
  bool Released(const std::string& name) const {
    const auto* a = FindAttribute(spec_, name);
    return a != nullptr && a->role() != fedanon::v1::ROLE_ID;
  }
  bool Common(const std::string& name, int release) const {
    return Released(name) && PreviousCsvColumn(name, release) >= 0;
  }
  // "previous1.NAME or previous2.NAME" over the given releases.
  static std::string Alternatives(const std::string& name, const std::vector<int>& releases) {
    std::vector<std::string> alt;
    alt.reserve(releases.size());
    for (int r : releases) alt.push_back(base::Cat("previous", r, ".", name));
    return absl::StrJoin(alt, " or ");
  }

  int CurrentColumn(const std::string& name) {
    for (size_t i = 0; i < model_->current_columns.size(); ++i) {
      if (model_->current_columns[i].name == name) return static_cast<int>(i);
    }
    CodedColumn c;
    c.name = name;
    for (size_t i = 0; i < data_.header.size(); ++i) {
      if (data_.header[i] == name) c.csv_column = static_cast<int>(i);
    }
    model_->current_columns.push_back(std::move(c));
    return static_cast<int>(model_->current_columns.size()) - 1;
  }
  int PreviousColumn(const std::string& name, int release = 1) {
    for (size_t i = 0; i < model_->previous_columns.size(); ++i) {
      const CodedColumn& c = model_->previous_columns[i];
      if (c.name == name && c.release == release) return static_cast<int>(i);
    }
    CodedColumn c;
    c.name = name;
    c.release = release;
    c.csv_column = name == kRecord ? -1 : PreviousCsvColumn(name, release);
    model_->previous_columns.push_back(std::move(c));
    return static_cast<int>(model_->previous_columns.size()) - 1;
  }

  // Checks the release number of a "previousI." reference.
  absl::Status CheckRelease(const Ref& ref, const std::string& text,
                            const std::string& where) const {
    if (ref.release > releases()) {
      return absl::InvalidArgumentError(base::Cat(where, ": '", text, "' names previous release ",
                                                  ref.release, " but ", releases(),
                                                  releases() == 1 ? " was" : " were", " given"));
    }
    return absl::OkStatus();
  }

  // An attribute of X: T1 QIDs go to x1, T2 columns to x2; a bare common name to both.
  absl::Status AddX(const std::string& text, const std::string& where, JoinTemplate* t) {
    ASSIGN_OR_RETURN(Ref ref, ParseRef(text, where));
    if (ref.name == kRecord) {
      return absl::InvalidArgumentError(base::Cat(where, ": x cannot contain ", text, " (only y)"));
    }
    RETURN_IF_ERROR(CheckRelease(ref, text, where));
    const bool in_current = FindAttribute(spec_, ref.name) != nullptr;
    // The previous releases this reference can name: the one given, or all.
    std::vector<int> named = ReleasesWith(ref.name);
    if (ref.release > 0) {
      named.clear();
      if (PreviousCsvColumn(ref.name, ref.release) >= 0) named.push_back(ref.release);
    }
    const bool in_previous = !named.empty();
    bool cur = ref.side == Side::kCurrent || (ref.side == Side::kAny && in_current);
    bool prev = ref.side == Side::kPrevious || (ref.side == Side::kAny && in_previous);
    if (cur) {
      if (!in_current) {
        return absl::InvalidArgumentError(
            base::Cat(where, ": x names '", text, "', which is not an attribute of this job"));
      }
      const int q = FindQid(data_, ref.name);
      if (q < 0) {
        return absl::InvalidArgumentError(base::Cat(
            where, ": x names '", text, "', which is not a QID attribute of this job (only QID ",
            "attributes of the current release are generalized)",
            in_previous
                ? base::Cat("; write previous.", ref.name, " for the previous release's column")
                : ""));
      }
      t->x1.push_back(q);
    }
    if (prev) {
      if (!in_previous) {
        return absl::InvalidArgumentError(base::Cat(
            where, ": x names '", text, "', which is not a column of the previous release ",
            ref.release > 0 ? PathOf(ref.release) : model_->previous_path));
      }
      // "previous.NAME" or a bare NAME with several previous releases: every one that has it.
      for (int r : named) t->x2.push_back(PreviousColumn(ref.name, r));
    }
    if (!cur && !prev) {
      return absl::InvalidArgumentError(base::Cat(where, ": x names unknown attribute '", text,
                                                  "' (neither in this job nor in ",
                                                  model_->previous_path, ")"));
    }
    return absl::OkStatus();
  }

  // A Y attribute (not generalized): a non-QID T1 attribute or a T2 column; side and column.
  absl::StatusOr<std::pair<bool, int>> ResolveY(const std::string& text, const std::string& where,
                                                const char* key) {
    ASSIGN_OR_RETURN(Ref ref, ParseRef(text, where));
    RETURN_IF_ERROR(CheckRelease(ref, text, where));
    const bool in_current = FindAttribute(spec_, ref.name) != nullptr;
    const std::vector<int> with = ReleasesWith(ref.name);
    const bool in_previous =
        ref.release > 0 ? PreviousCsvColumn(ref.name, ref.release) >= 0 : !with.empty();
    if (several() && ref.release == 0 && ref.side != Side::kCurrent && with.size() > 1 &&
        !(ref.side == Side::kAny && in_current)) {
      return absl::InvalidArgumentError(base::Cat(where, ": ", key, " names '", text,
                                                  "', which several previous releases have; write ",
                                                  Alternatives(ref.name, with)));
    }
    if (ref.side == Side::kAny) {
      if (in_current && in_previous) {
        return absl::InvalidArgumentError(
            base::Cat(where, ": ", key, " names '", text,
                      "', which both releases have; write current.", ref.name, " or ",
                      several() ? Alternatives(ref.name, with) : base::Cat("previous.", ref.name)));
      }
      if (!in_current && !in_previous) {
        return absl::InvalidArgumentError(base::Cat(where, ": ", key, " names unknown attribute '",
                                                    text, "' (neither in this job nor in ",
                                                    model_->previous_path, ")"));
      }
      ref.side = in_current ? Side::kCurrent : Side::kPrevious;
    }
    if (ref.side == Side::kCurrent) {
      if (!in_current) {
        return absl::InvalidArgumentError(base::Cat(where, ": ", key, " names '", text,
                                                    "', which is not an attribute of this job"));
      }
      if (FindQid(data_, ref.name) >= 0) {
        return absl::InvalidArgumentError(
            base::Cat(where, ": ", key, " names '", text,
                      "', a QID attribute; Y is the fixed reference point ",
                      "and cannot be generalized (thesis §6.1.2)"));
      }
      return std::make_pair(false, CurrentColumn(ref.name));
    }
    if (!in_previous) {
      return absl::InvalidArgumentError(base::Cat(
          where, ": ", key, " names '", text, "', which is not a column of the previous release ",
          ref.release > 0 ? PathOf(ref.release) : model_->previous_path));
    }
    return std::make_pair(true,
                          PreviousColumn(ref.name, ref.release > 0 ? ref.release : with.front()));
  }

 private:
  const JobSpec& spec_;
  const table::Dataset& data_;
  const std::vector<std::vector<std::string>>& headers_;
  SequentialModel* model_;
};

void SortUnique(std::vector<int>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

// Reads the given columns of a CSV file (all records, or those with keep[i] when `keep` is given)
// into dictionary-coded columns; also the line of every record read. `source`: the Dataset read
// from `path`, whose text is read again instead of the file (which may be a FIFO).
absl::Status ReadColumns(const std::string& path, const std::vector<bool>* keep,
                         std::vector<CodedColumn>* columns, std::vector<size_t>* lines,
                         const table::Dataset* source = nullptr) {
  ASSIGN_OR_RETURN(auto reader,
                   source != nullptr ? table::ReopenSource(*source) : table::CsvReader::Open(path));
  std::vector<std::string_view> fields;
  ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
  if (!has_header) return absl::InvalidArgumentError(base::Cat(path, ": the file is empty"));
  const size_t width = fields.size();
  std::vector<absl::flat_hash_map<std::string, int32_t>> dict(columns->size());
  for (size_t i = 0;; ++i) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&fields));
    if (!more) break;
    RETURN_IF_ERROR(reader->CheckFieldCount(fields, width));
    if (keep != nullptr && (i >= keep->size() || !(*keep)[i])) continue;
    lines->push_back(reader->line());
    for (size_t c = 0; c < columns->size(); ++c) {
      CodedColumn& col = (*columns)[c];
      // The "@record" pseudo-column: the record's number in the release.
      std::string value = col.csv_column < 0 ? base::Cat("#", lines->size() - 1)
                                             : std::string(fields[col.csv_column]);
      auto [it, added] = dict[c].emplace(value, static_cast<int32_t>(col.values.size()));
      if (added) col.values.push_back(std::move(value));
      col.codes.push_back(it->second);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ReadHeader(const std::string& path) {
  ASSIGN_OR_RETURN(auto reader, table::CsvReader::Open(path));
  std::vector<std::string_view> fields;
  ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
  if (!has_header) return absl::InvalidArgumentError(base::Cat(path, ": the file is empty"));
  std::vector<std::string> header;
  header.reserve(fields.size());
  for (std::string_view f : fields) header.emplace_back(f);
  return header;
}

// Join attributes with previous release `release`: every released attribute of this job that it
// also has (a star join: previous releases are joined with T1 only).
absl::Status ResolveJoinAttributesOf(const JobSpec& spec, const table::Dataset& data,
                                     Resolver& resolver, int release, SequentialModel* model) {
  size_t before = model->join.size();
  for (const auto& a : spec.attributes()) {
    if (!resolver.Common(a.name(), release)) continue;
    JoinAttribute j;
    j.name = a.name();
    j.release = release;
    if (a.role() == fedanon::v1::ROLE_QID) {
      j.qid = FindQid(data, a.name());
      if (j.qid < 0 || data.qids[j.qid].kind != table::QidKind::kTaxonomy) {
        return absl::InvalidArgumentError(base::Cat(
            "attribute '", a.name(), "' is in both releases (a join attribute) but is a QID ",
            "without a taxonomy here; sequential releases match join attributes through their ",
            "taxonomy (thesis §6.1.3): give it a taxonomy or drop the column from one release"));
      }
    } else {
      j.current_raw = resolver.CurrentColumn(a.name());
    }
    j.previous = resolver.PreviousColumn(a.name(), release);
    model->join.push_back(std::move(j));
  }
  if (model->join.size() == before) {
    return absl::InvalidArgumentError(base::Cat(
        "the previous release ", resolver.PathOf(release),
        " has no column in common with the attributes this job releases; there is no join"));
  }
  return absl::OkStatus();
}

// Join attributes with every previous release, release by release.
absl::Status ResolveJoinAttributes(const JobSpec& spec, const table::Dataset& data,
                                   Resolver& resolver, SequentialModel* model) {
  for (int release = 1; release <= resolver.releases(); ++release) {
    RETURN_IF_ERROR(ResolveJoinAttributesOf(spec, data, resolver, release, model));
  }
  return absl::OkStatus();
}

// Inconsistency rule `i` of the spec, with its attributes resolved (its values are resolved once
// the columns are read, by ResolveRuleValues): one rule per previous release it applies to, the
// one named by `previous: previousI.D`, or every one that has the column D.
absl::StatusOr<std::vector<InconsistencyRule>> ResolveRule(const JobSpec& spec,
                                                           const table::Dataset& data, int i,
                                                           Resolver& resolver,
                                                           const SequentialModel& model) {
  const auto& in = spec.sequential().inconsistent(i);
  const std::string where = base::Cat("sequential.inconsistent rule ", i + 1);
  InconsistencyRule rule;
  rule.spec_index = i;
  rule.current_name = in.current();
  rule.previous_name = in.previous();
  std::vector<int> releases;
  if (resolver.several()) {
    ASSIGN_OR_RETURN(Ref ref, ParseRef(in.previous(), where));
    if (ref.side == Side::kCurrent || ref.name == kRecord) {
      return absl::InvalidArgumentError(base::Cat(where, ": previous '", in.previous(),
                                                  "' must name a column of a previous release"));
    }
    RETURN_IF_ERROR(resolver.CheckRelease(ref, in.previous(), where));
    rule.previous_name = ref.name;
    releases = resolver.ReleasesWith(ref.name);
    if (ref.release > 0) {
      releases.clear();
      if (resolver.PreviousCsvColumn(ref.name, ref.release) >= 0) releases.push_back(ref.release);
    }
    if (releases.empty()) {
      return absl::InvalidArgumentError(base::Cat(
          where, ": previous '", in.previous(), "' is not a column of the previous release ",
          ref.release > 0 ? resolver.PathOf(ref.release) : model.previous_path));
    }
  } else {
    releases.push_back(1);
  }
  const auto* a = FindAttribute(spec, in.current());
  if (a == nullptr || a->role() == fedanon::v1::ROLE_ID) {
    return absl::InvalidArgumentError(
        base::Cat(where, ": current '", in.current(), "' is not an attribute this job releases"));
  }
  if (!resolver.several() && resolver.PreviousCsvColumn(in.previous()) < 0) {
    return absl::InvalidArgumentError(base::Cat(where, ": previous '", in.previous(),
                                                "' is not a column of the previous release ",
                                                model.previous_path));
  }
  if (in.current() == rule.previous_name) {
    return absl::InvalidArgumentError(base::Cat(where, ": '", in.current(),
                                                "' is in both releases; the consistency predicate ",
                                                "already matches a common attribute with itself"));
  }
  if (a->role() == fedanon::v1::ROLE_QID) {
    rule.current_qid = FindQid(data, in.current());
    if (rule.current_qid < 0 || data.qids[rule.current_qid].kind != table::QidKind::kTaxonomy) {
      return absl::InvalidArgumentError(base::Cat(
          where, ": current '", in.current(), "' is a QID without a taxonomy; rules apply to ",
          "taxonomy QIDs and attributes released unchanged"));
    }
    const auto node = data.qids[rule.current_qid].taxonomy->Find(in.current_value());
    if (!node) {
      return absl::InvalidArgumentError(base::Cat(where, ": current_value '", in.current_value(),
                                                  "' is not in the taxonomy of '", in.current(),
                                                  "'"));
    }
    rule.current_value = *node;
  } else {
    rule.current_raw = resolver.CurrentColumn(in.current());
  }
  std::vector<InconsistencyRule> rules;
  for (int r : releases) {
    rule.release = r;
    rule.previous = resolver.PreviousColumn(rule.previous_name, r);
    rules.push_back(rule);
  }
  return rules;
}

// Anonymity template `i` of the spec, resolved.
absl::StatusOr<JoinTemplate> ResolveAnonymityTemplate(const JobSpec& spec, int i,
                                                      Resolver& resolver,
                                                      const SequentialModel& model) {
  const auto& s = spec.sequential().anonymity(i);
  const std::string where = TemplateWhere(true, i);
  JoinTemplate t;
  t.anonymity = true;
  t.k = s.k();
  for (const auto& x : s.x()) RETURN_IF_ERROR(resolver.AddX(x, where, &t));
  for (const auto& y : s.y()) {
    if (y == "current.@record") {
      t.y1_record = true;
      continue;
    }
    if (y == "previous.@record" && !resolver.several()) {
      t.y2_record = true;
      continue;
    }
    ASSIGN_OR_RETURN(Ref ref, ParseRef(y, where));
    if (ref.side == Side::kPrevious && ref.name == kRecord) {
      // "previousI.@record"; with several releases "previous.@record" is ambiguous.
      if (ref.release == 0) {
        std::vector<int> all;
        for (int r = 1; r <= resolver.releases(); ++r) all.push_back(r);
        return absl::InvalidArgumentError(
            base::Cat(where, ": y names '", y, "' but there are several previous releases; write ",
                      Resolver::Alternatives(std::string(kRecord), all)));
      }
      RETURN_IF_ERROR(resolver.CheckRelease(ref, y, where));
      if (!resolver.several()) {
        t.y2_record = true;
      } else {
        t.y2.push_back(resolver.PreviousColumn(std::string(kRecord), ref.release));
      }
      continue;
    }
    ASSIGN_OR_RETURN(auto side_col, resolver.ResolveY(y, where, "y"));
    (side_col.first ? t.y2 : t.y1).push_back(side_col.second);
  }
  SortUnique(&t.x1);
  SortUnique(&t.x2);
  SortUnique(&t.y1);
  SortUnique(&t.y2);
  for (int c : t.y2) {
    if (std::find(t.x2.begin(), t.x2.end(), c) != t.x2.end()) {
      return absl::InvalidArgumentError(
          base::Cat(where, ": ", model.PreviousRef(c), " is in both x and y"));
    }
  }
  t.description = base::Cat("<{", absl::StrJoin(s.x(), ", "), "}, {", absl::StrJoin(s.y(), ", "),
                            "}, ", s.k(), ">");
  return t;
}

// Confidentiality template `i` of the spec, resolved (its sensitive value codes are resolved once
// the columns are read, by ResolveSensitiveCodes).
absl::StatusOr<JoinTemplate> ResolveConfidentialityTemplate(const JobSpec& spec, int i,
                                                            Resolver& resolver,
                                                            const SequentialModel& model) {
  const auto& s = spec.sequential().confidentiality(i);
  const std::string where = TemplateWhere(false, i);
  JoinTemplate t;
  t.anonymity = false;
  t.max_conf = s.max();
  for (const auto& x : s.x()) RETURN_IF_ERROR(resolver.AddX(x, where, &t));
  SortUnique(&t.x1);
  SortUnique(&t.x2);
  ASSIGN_OR_RETURN(auto side_col, resolver.ResolveY(s.attribute(), where, "attribute"));
  t.y_previous = side_col.first;
  t.y_column = side_col.second;
  if (t.y_previous && std::find(t.x2.begin(), t.x2.end(), t.y_column) != t.x2.end()) {
    return absl::InvalidArgumentError(base::Cat(where, ": ", model.PreviousRef(t.y_column),
                                                " is both in x and the sensitive attribute"));
  }
  t.description = base::Cat("<{", absl::StrJoin(s.x(), ", "), "}, ", s.attribute(), " in {",
                            absl::StrJoin(s.sensitive_values(), ", "), "}, ", s.max(), ">");
  return t;
}

// Reads the columns the model names; T1 rows follow Dataset::kept so that record indices agree
// with `data`.
absl::Status ReadReleases(const table::Dataset& data, SequentialModel* model) {
  for (const CodedColumn& c : model->current_columns) {
    if (c.csv_column < 0) {
      return absl::InvalidArgumentError(
          base::Cat(data.source_path, ": no column named '", c.name, "' in the header"));
    }
  }
  RETURN_IF_ERROR(ReadColumns(data.source_path, &data.kept, &model->current_columns,
                              &model->current_lines, &data));
  if (model->current_lines.size() != data.num_records) {
    return absl::InternalError(base::Cat(data.source_path, " changed while it was read"));
  }
  if (!model->several()) {
    RETURN_IF_ERROR(ReadColumns(model->previous_path, nullptr, &model->previous_columns,
                                &model->previous_lines));
    model->previous_records = model->previous_lines.size();
    if (model->previous_records == 0) {
      return absl::InvalidArgumentError(
          base::Cat(model->previous_path, ": the previous release has no records"));
    }
    return absl::OkStatus();
  }
  // Several previous releases: each one's columns, coded per record of that release (the history
  // table is built later, by BuildHistoryTable).
  for (size_t r = 1; r <= model->previous_paths.size(); ++r) {
    std::vector<int> index;
    std::vector<CodedColumn> columns;
    for (size_t c = 0; c < model->previous_columns.size(); ++c) {
      if (model->previous_columns[c].release != static_cast<int>(r)) continue;
      index.push_back(static_cast<int>(c));
      columns.push_back(std::move(model->previous_columns[c]));
    }
    std::vector<size_t>& lines = model->release_lines[r - 1];
    RETURN_IF_ERROR(ReadColumns(model->previous_paths[r - 1], nullptr, &columns, &lines));
    for (size_t i = 0; i < index.size(); ++i) {
      model->previous_columns[index[i]] = std::move(columns[i]);
    }
    if (lines.empty()) {
      return absl::InvalidArgumentError(
          base::Cat(model->previous_paths[r - 1], ": the previous release has no records"));
    }
  }
  return absl::OkStatus();
}

// The codes of the sensitive values of every confidentiality template.
absl::Status ResolveSensitiveCodes(const JobSpec& spec, const table::Dataset& data,
                                   SequentialModel* model) {
  int conf_index = 0;
  for (JoinTemplate& t : model->templates) {
    if (t.anonymity) continue;
    const auto& s = spec.sequential().confidentiality(conf_index);
    const CodedColumn& col =
        t.y_previous ? model->previous_columns[t.y_column] : model->current_columns[t.y_column];
    for (const std::string& v : s.sensitive_values()) {
      auto it = std::find(col.values.begin(), col.values.end(), v);
      if (it == col.values.end()) {
        return absl::InvalidArgumentError(base::Cat(
            TemplateWhere(false, conf_index), ": sensitive value '", v, "' does not occur in ",
            t.y_previous ? model->PreviousRef(t.y_column) : base::Cat("current.", col.name), " (",
            !t.y_previous      ? data.source_path
            : model->several() ? model->previous_paths[col.release - 1]
                               : model->previous_path,
            ")"));
      }
      t.sensitive_codes.push_back(static_cast<int32_t>(it - col.values.begin()));
    }
    ++conf_index;
  }
  return absl::OkStatus();
}

// Maps every T2 value of a join attribute onto its T1 counterpart.
absl::Status MapJoinValues(const table::Dataset& data, SequentialModel* model) {
  for (JoinAttribute& j : model->join) {
    const CodedColumn& prev = model->previous_columns[j.previous];
    j.previous_to_current.assign(prev.values.size(), -1);
    for (size_t v = 0; v < prev.values.size(); ++v) {
      if (j.qid >= 0) {
        const std::optional<table::Taxonomy::NodeId> node =
            data.qids[j.qid].taxonomy->Find(prev.values[v]);
        if (!node) {
          const size_t first = static_cast<size_t>(
              std::find(prev.codes.begin(), prev.codes.end(), static_cast<int32_t>(v)) -
              prev.codes.begin());
          const bool several = model->several();
          return absl::InvalidArgumentError(base::Cat(
              several ? model->previous_paths[prev.release - 1] : model->previous_path, ":",
              several ? model->release_lines[prev.release - 1][first]
                      : model->previous_lines[first],
              ":", prev.csv_column + 1, ": value '", prev.values[v], "' of join attribute '",
              j.name, "' is not in its taxonomy (neither a leaf nor a generalization)"));
        }
        j.previous_to_current[v] = *node;
      } else {
        const CodedColumn& cur = model->current_columns[j.current_raw];
        auto it = std::find(cur.values.begin(), cur.values.end(), prev.values[v]);
        if (it != cur.values.end()) {
          j.previous_to_current[v] = static_cast<int32_t>(it - cur.values.begin());
        }
      }
    }
  }
  return absl::OkStatus();
}

// The values c and d of every inconsistency rule: c's raw code (a taxonomy node was resolved with
// the rule) and which T2 values of D are at or below d.
absl::Status ResolveRuleValues(const JobSpec& spec, const table::Dataset& data,
                               SequentialModel* model) {
  const auto& seq = spec.sequential();
  for (size_t i = 0; i < model->rules.size(); ++i) {
    InconsistencyRule& rule = model->rules[i];
    const auto& in = seq.inconsistent(rule.spec_index);
    if (rule.current_raw >= 0) {
      const auto& values = model->current_columns[rule.current_raw].values;
      auto it = std::find(values.begin(), values.end(), in.current_value());
      rule.current_value = it == values.end() ? -1 : static_cast<int32_t>(it - values.begin());
    }
    const CodedColumn& prev = model->previous_columns[rule.previous];
    const table::Taxonomy* tax = nullptr;
    for (const JoinAttribute& j : model->join) {
      if (j.name == rule.previous_name && j.qid >= 0) tax = data.qids[j.qid].taxonomy.get();
    }
    std::optional<table::Taxonomy::NodeId> d;
    if (tax != nullptr) {
      d = tax->Find(in.previous_value());
      if (!d) {
        return absl::InvalidArgumentError(
            base::Cat("sequential.inconsistent rule ", rule.spec_index + 1, ": previous_value '",
                      in.previous_value(), "' is not in the taxonomy of '", in.previous(), "'"));
      }
    }
    rule.previous_below.assign(prev.values.size(), false);
    for (size_t v = 0; v < prev.values.size(); ++v) {
      if (tax == nullptr) {
        rule.previous_below[v] = prev.values[v] == in.previous_value();
      } else if (const auto w = tax->Find(prev.values[v])) {
        rule.previous_below[v] = tax->Generalizes(*d, *w);
      }
    }
  }
  return absl::OkStatus();
}

// What matches a T1 value against a column of one previous release, for the loader's checks: a
// join attribute (consistency) or an inconsistency rule.
struct LoaderSlot {
  bool rule = false;
  int index = -1;  // into model.join or model.rules
  int release = 1;
  int qid = -1;
  int current_raw = -1;
  int previous = -1;
};

std::vector<LoaderSlot> LoaderSlots(const SequentialModel& model) {
  std::vector<LoaderSlot> slots;
  for (size_t j = 0; j < model.join.size(); ++j) {
    const JoinAttribute& a = model.join[j];
    slots.push_back({false, static_cast<int>(j), a.release, a.qid, a.current_raw, a.previous});
  }
  for (size_t r = 0; r < model.rules.size(); ++r) {
    const InconsistencyRule& a = model.rules[r];
    slots.push_back(
        {true, static_cast<int>(r), a.release, a.current_qid, a.current_raw, a.previous});
  }
  return slots;
}

int32_t CurrentSlotValue(const SequentialModel& model, const table::Dataset& data,
                         const LoaderSlot& s, size_t record) {
  return s.qid >= 0 ? data.qids[s.qid].codes[record]
                    : model.current_columns[s.current_raw].codes[record];
}

bool SlotMatches(const SequentialModel& model, const table::Dataset& data, const LoaderSlot& s,
                 int32_t current, int32_t previous) {
  return s.rule ? !RuleForbids(model, data, s.index, current, previous)
                : JoinValuesMatch(model, data, s.index, current, previous);
}

// Several previous releases: every pair (T1, Ti) must be population-related (thesis §6.2.2 for
// each pair of the star join): every raw T1 record matches some record of Ti and every record of
// Ti some raw T1 record. Errors name the first dangling record by file and line.
absl::Status CheckPairwisePopulationRelated(const table::Dataset& data,
                                            const SequentialModel& model) {
  const std::vector<LoaderSlot> all = LoaderSlots(model);
  for (int r = 1; r <= static_cast<int>(model.previous_paths.size()); ++r) {
    std::vector<LoaderSlot> slots;
    for (const LoaderSlot& s : all) {
      if (s.release == r) slots.push_back(s);
    }
    const std::string& path = model.previous_paths[r - 1];
    const size_t n2 = model.release_lines[r - 1].size();
    // Distinct value tuples on the slots, with a record of each.
    absl::flat_hash_map<std::vector<int32_t>, size_t> keys1, keys2;
    std::vector<std::pair<std::vector<int32_t>, size_t>> list1, list2;
    for (size_t rec = 0; rec < data.num_records; ++rec) {
      std::vector<int32_t> k;
      k.reserve(slots.size());
      for (const LoaderSlot& s : slots) k.push_back(CurrentSlotValue(model, data, s, rec));
      if (keys1.emplace(k, rec).second) list1.emplace_back(std::move(k), rec);
    }
    for (size_t rec = 0; rec < n2; ++rec) {
      std::vector<int32_t> k;
      k.reserve(slots.size());
      for (const LoaderSlot& s : slots) k.push_back(model.previous_columns[s.previous].codes[rec]);
      if (keys2.emplace(k, rec).second) list2.emplace_back(std::move(k), rec);
    }
    std::vector<bool> matched(list2.size(), false);
    for (const auto& [k1, rec1] : list1) {
      bool any = false;
      for (size_t b = 0; b < list2.size(); ++b) {
        bool m = true;
        for (size_t i = 0; i < slots.size() && m; ++i) {
          m = SlotMatches(model, data, slots[i], k1[i], list2[b].first[i]);
        }
        if (m) any = matched[b] = true;
      }
      if (!any) {
        std::vector<std::string> values;
        for (size_t i = 0; i < slots.size(); ++i) {
          const LoaderSlot& s = slots[i];
          if (s.rule) continue;
          values.push_back(base::Cat(model.join[s.index].name, "=",
                                     s.qid >= 0
                                         ? data.qids[s.qid].taxonomy->label(k1[i])
                                         : model.current_columns[s.current_raw].values[k1[i]]));
        }
        return absl::FailedPreconditionError(base::Cat(
            data.source_path, ":", model.current_lines[rec1], ": this record (",
            absl::StrJoin(values, ", "), ") matches no record of the previous release ", path,
            "; the two releases must be projections of the same table (population-related, ",
            "thesis §6.2.2)"));
      }
    }
    for (size_t b = 0; b < list2.size(); ++b) {
      if (matched[b]) continue;
      std::vector<std::string> values;
      for (const LoaderSlot& s : slots) {
        const CodedColumn& c = model.previous_columns[s.previous];
        values.push_back(base::Cat(c.name, "=", c.values[c.codes[list2[b].second]]));
      }
      return absl::FailedPreconditionError(
          base::Cat(path, ":", model.release_lines[r - 1][list2[b].second], ": this record (",
                    absl::StrJoin(values, ", "), ") matches no record of the current release ",
                    data.source_path, "; the two releases must be projections of the same table ",
                    "(population-related, thesis §6.2.2)"));
    }
  }
  return absl::OkStatus();
}

// Several previous releases: replaces the per-release codes of previous_columns by the rows of
// the history table (see SequentialModel). Each release's records are first grouped into distinct
// rows on the columns the model uses; a combination (row of T2, ..., row of Tp) is kept when some
// most general T1 record (every taxonomy QID at its root, unchanged columns as they are) matches
// each of its rows: specializing T1 only removes matches (Observation 6.1.1), so no other
// combination can ever be in the join.
absl::Status BuildHistoryTable(const table::Dataset& data, SequentialModel* model) {
  const size_t p = model->previous_paths.size();
  // Distinct rows per release: their representative record and multiplicity.
  std::vector<std::vector<size_t>> rep(p);
  std::vector<std::vector<uint64_t>> mult(p);
  for (size_t r = 0; r < p; ++r) {
    absl::flat_hash_map<std::vector<int32_t>, size_t> row_of;
    for (size_t rec = 0; rec < model->release_lines[r].size(); ++rec) {
      std::vector<int32_t> k;
      for (const CodedColumn& c : model->previous_columns) {
        if (c.release == static_cast<int>(r + 1)) k.push_back(c.codes[rec]);
      }
      auto [it, added] = row_of.emplace(std::move(k), rep[r].size());
      if (added) {
        rep[r].push_back(rec);
        mult[r].push_back(0);
      }
      ++mult[r][it->second];
    }
  }
  // The most general T1's distinct join values.
  const std::vector<LoaderSlot> slots = LoaderSlots(*model);
  std::vector<std::vector<int32_t>> general;
  {
    absl::flat_hash_set<std::vector<int32_t>> seen;
    for (size_t rec = 0; rec < data.num_records; ++rec) {
      std::vector<int32_t> k;
      k.reserve(slots.size());
      for (const LoaderSlot& s : slots) {
        k.push_back(s.qid >= 0 ? data.qids[s.qid].taxonomy->root()
                               : CurrentSlotValue(*model, data, s, rec));
      }
      if (seen.insert(k).second) general.push_back(std::move(k));
    }
  }
  const auto too_large = [&](uint64_t rows) {
    return absl::FailedPreconditionError(base::Cat(
        "the previous releases ", model->previous_path, " combine into ", rows,
        " or more rows (the star join's history table: every combination of their distinct rows, ",
        "on the columns the join and the templates use, that the most general current release ",
        "matches), more than the ", kMaxHistoryRows, " fedanon holds in memory; name fewer ",
        "columns of the previous releases in the templates, or give fewer previous releases"));
  };
  std::vector<std::vector<int32_t>> tuples;
  absl::flat_hash_set<std::vector<int32_t>> seen;
  for (const std::vector<int32_t>& g : general) {
    std::vector<std::vector<int32_t>> rows(p);
    uint64_t product = 1;
    for (size_t r = 0; r < p; ++r) {
      for (size_t row = 0; row < rep[r].size(); ++row) {
        bool m = true;
        for (size_t i = 0; i < slots.size() && m; ++i) {
          if (slots[i].release != static_cast<int>(r + 1)) continue;
          m = SlotMatches(*model, data, slots[i], g[i],
                          model->previous_columns[slots[i].previous].codes[rep[r][row]]);
        }
        if (m) rows[r].push_back(static_cast<int32_t>(row));
      }
      product *= rows[r].size();
      if (product > kMaxHistoryRows) return too_large(product);
    }
    if (product == 0) continue;
    std::vector<size_t> at(p, 0);  // odometer over rows[0] x ... x rows[p-1]
    while (true) {
      std::vector<int32_t> t(p);
      for (size_t r = 0; r < p; ++r) t[r] = rows[r][at[r]];
      if (general.size() == 1 || seen.insert(t).second) tuples.push_back(std::move(t));
      if (tuples.size() > kMaxHistoryRows) return too_large(tuples.size());
      size_t r = p;
      while (r > 0 && ++at[r - 1] == rows[r - 1].size()) at[--r] = 0;
      if (r == 0) break;
    }
  }
  for (CodedColumn& c : model->previous_columns) {
    const size_t r = static_cast<size_t>(c.release - 1);
    std::vector<int32_t> codes(tuples.size());
    for (size_t i = 0; i < tuples.size(); ++i) codes[i] = c.codes[rep[r][tuples[i][r]]];
    c.codes = std::move(codes);
  }
  model->previous_weights.assign(tuples.size(), 1);
  for (size_t i = 0; i < tuples.size(); ++i) {
    for (size_t r = 0; r < p; ++r) model->previous_weights[i] *= mult[r][tuples[i][r]];
  }
  model->previous_records = tuples.size();
  return absl::OkStatus();
}

}  // namespace

std::string SequentialModel::PreviousRef(int c) const {
  const CodedColumn& col = previous_columns[c];
  return several() ? base::Cat("previous", col.release, ".", col.name)
                   : base::Cat("previous.", col.name);
}

absl::StatusOr<SequentialModel> LoadSequentialModel(const JobSpec& spec, const table::Dataset& data,
                                                    const std::string& previous_path) {
  return LoadSequentialModel(spec, data, std::vector<std::string>{previous_path});
}

absl::StatusOr<SequentialModel> LoadSequentialModel(
    const JobSpec& spec, const table::Dataset& data,
    const std::vector<std::string>& previous_paths) {
  if (previous_paths.empty()) {
    return absl::InvalidArgumentError("sequential releases need a previous release");
  }
  SequentialModel model;
  model.previous_paths = previous_paths;
  model.previous_path = absl::StrJoin(previous_paths, ", ");
  model.release_lines.resize(previous_paths.size());
  std::vector<std::vector<std::string>> headers;
  for (const std::string& path : previous_paths) {
    ASSIGN_OR_RETURN(std::vector<std::string> header, ReadHeader(path));
    headers.push_back(std::move(header));
  }
  Resolver resolver(spec, data, headers, &model);

  // Resolve names first (in this order: the columns are numbered as they are first named).
  RETURN_IF_ERROR(ResolveJoinAttributes(spec, data, resolver, &model));
  const auto& seq = spec.sequential();
  for (int i = 0; i < seq.inconsistent_size(); ++i) {
    ASSIGN_OR_RETURN(std::vector<InconsistencyRule> rules,
                     ResolveRule(spec, data, i, resolver, model));
    for (InconsistencyRule& rule : rules) model.rules.push_back(std::move(rule));
  }
  for (int i = 0; i < seq.anonymity_size(); ++i) {
    ASSIGN_OR_RETURN(JoinTemplate t, ResolveAnonymityTemplate(spec, i, resolver, model));
    model.templates.push_back(std::move(t));
  }
  for (int i = 0; i < seq.confidentiality_size(); ++i) {
    ASSIGN_OR_RETURN(JoinTemplate t, ResolveConfidentialityTemplate(spec, i, resolver, model));
    model.templates.push_back(std::move(t));
  }

  // Then read the columns and resolve the values named in the spec against them.
  RETURN_IF_ERROR(ReadReleases(data, &model));
  RETURN_IF_ERROR(ResolveSensitiveCodes(spec, data, &model));
  RETURN_IF_ERROR(MapJoinValues(data, &model));
  RETURN_IF_ERROR(ResolveRuleValues(spec, data, &model));
  if (model.several()) {
    RETURN_IF_ERROR(CheckPairwisePopulationRelated(data, model));
    RETURN_IF_ERROR(BuildHistoryTable(data, &model));
  }
  return model;
}

bool RuleForbids(const SequentialModel& model, const table::Dataset& data, int r, int32_t current,
                 int32_t previous) {
  const InconsistencyRule& rule = model.rules[r];
  if (!rule.previous_below[previous] || rule.current_value < 0) return false;
  if (rule.current_qid >= 0) {
    return data.qids[rule.current_qid].taxonomy->Generalizes(rule.current_value, current);
  }
  return current == rule.current_value;
}

bool JoinValuesMatch(const SequentialModel& model, const table::Dataset& data, int j,
                     int32_t current, int32_t previous) {
  const JoinAttribute& ja = model.join[j];
  const int32_t p = ja.previous_to_current[previous];
  if (ja.qid >= 0) {
    const table::Taxonomy& tax = *data.qids[ja.qid].taxonomy;
    return tax.Generalizes(current, p) || tax.Generalizes(p, current);
  }
  return p >= 0 && p == current;
}

}  // namespace fedanon::sequential
