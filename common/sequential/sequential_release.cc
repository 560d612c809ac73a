#include "common/sequential/sequential_release.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/base/string_views.h"
#include "common/spec/sequential_spec.h"
#include "common/table/csv.h"

namespace fedanon::common {
namespace {

using ::fedanon::v1::JobSpec;
using Ref = SequentialRef;
using Side = SequentialSide;
constexpr std::string_view kRecord = kSequentialRecord;

absl::StatusOr<Ref> ParseRef(const std::string& text, const std::string& where) {
  return ParseSequentialRef(text, where);
}

std::string TemplateWhere(bool anonymity, int i) { return SequentialTemplateWhere(anonymity, i); }

const fedanon::v1::Attribute* FindAttribute(const JobSpec& spec, const std::string& name) {
  for (const auto& a : spec.attributes()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int FindQid(const Dataset& data, const std::string& name) {
  for (size_t i = 0; i < data.qids.size(); ++i) {
    if (data.qids[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// Resolves names against both releases while loading.
class Resolver {
 public:
  Resolver(const JobSpec& spec, const Dataset& data,
           const std::vector<std::string>& previous_header, SequentialModel* model)
      : spec_(spec), data_(data), header_(previous_header), model_(model) {}

  int PreviousCsvColumn(const std::string& name) const {
    for (size_t i = 0; i < header_.size(); ++i) {
      if (header_[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
  bool Released(const std::string& name) const {
    const auto* a = FindAttribute(spec_, name);
    return a != nullptr && a->role() != fedanon::v1::ROLE_ID;
  }
  bool Common(const std::string& name) const {
    return Released(name) && PreviousCsvColumn(name) >= 0;
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
  int PreviousColumn(const std::string& name) {
    for (size_t i = 0; i < model_->previous_columns.size(); ++i) {
      if (model_->previous_columns[i].name == name) return static_cast<int>(i);
    }
    CodedColumn c;
    c.name = name;
    c.csv_column = PreviousCsvColumn(name);
    model_->previous_columns.push_back(std::move(c));
    return static_cast<int>(model_->previous_columns.size()) - 1;
  }

  // An attribute of X: T1 QIDs go to x1, T2 columns to x2; a bare common name to both.
  absl::Status AddX(const std::string& text, const std::string& where, JoinTemplate* t) {
    ASSIGN_OR_RETURN(Ref ref, ParseRef(text, where));
    if (ref.name == kRecord) {
      return absl::InvalidArgumentError(Cat(where, ": x cannot contain ", text, " (only y)"));
    }
    const bool in_current = FindAttribute(spec_, ref.name) != nullptr;
    const bool in_previous = PreviousCsvColumn(ref.name) >= 0;
    bool cur = ref.side == Side::kCurrent || (ref.side == Side::kAny && in_current);
    bool prev = ref.side == Side::kPrevious || (ref.side == Side::kAny && in_previous);
    if (cur) {
      if (!in_current) {
        return absl::InvalidArgumentError(
            Cat(where, ": x names '", text, "', which is not an attribute of this job"));
      }
      const int q = FindQid(data_, ref.name);
      if (q < 0) {
        return absl::InvalidArgumentError(Cat(
            where, ": x names '", text, "', which is not a QID attribute of this job (only QID ",
            "attributes of the current release are generalized)",
            in_previous ? Cat("; write previous.", ref.name, " for the previous release's column")
                        : ""));
      }
      t->x1.push_back(q);
    }
    if (prev) {
      if (!in_previous) {
        return absl::InvalidArgumentError(Cat(where, ": x names '", text,
                                              "', which is not a column of the previous release ",
                                              model_->previous_path));
      }
      t->x2.push_back(PreviousColumn(ref.name));
    }
    if (!cur && !prev) {
      return absl::InvalidArgumentError(Cat(where, ": x names unknown attribute '", text,
                                            "' (neither in this job nor in ", model_->previous_path,
                                            ")"));
    }
    return absl::OkStatus();
  }

  // A Y attribute (not generalized): a non-QID T1 attribute or a T2 column; side and column.
  absl::StatusOr<std::pair<bool, int>> ResolveY(const std::string& text, const std::string& where,
                                                const char* key) {
    ASSIGN_OR_RETURN(Ref ref, ParseRef(text, where));
    const bool in_current = FindAttribute(spec_, ref.name) != nullptr;
    const bool in_previous = PreviousCsvColumn(ref.name) >= 0;
    if (ref.side == Side::kAny) {
      if (in_current && in_previous) {
        return absl::InvalidArgumentError(Cat(where, ": ", key, " names '", text,
                                              "', which both releases have; write current.",
                                              ref.name, " or previous.", ref.name));
      }
      if (!in_current && !in_previous) {
        return absl::InvalidArgumentError(Cat(where, ": ", key, " names unknown attribute '", text,
                                              "' (neither in this job nor in ",
                                              model_->previous_path, ")"));
      }
      ref.side = in_current ? Side::kCurrent : Side::kPrevious;
    }
    if (ref.side == Side::kCurrent) {
      if (!in_current) {
        return absl::InvalidArgumentError(
            Cat(where, ": ", key, " names '", text, "', which is not an attribute of this job"));
      }
      if (FindQid(data_, ref.name) >= 0) {
        return absl::InvalidArgumentError(Cat(where, ": ", key, " names '", text,
                                              "', a QID attribute; Y is the fixed reference point ",
                                              "and cannot be generalized (thesis §6.1.2)"));
      }
      return std::make_pair(false, CurrentColumn(ref.name));
    }
    if (!in_previous) {
      return absl::InvalidArgumentError(Cat(where, ": ", key, " names '", text,
                                            "', which is not a column of the previous release ",
                                            model_->previous_path));
    }
    return std::make_pair(true, PreviousColumn(ref.name));
  }

 private:
  const JobSpec& spec_;
  const Dataset& data_;
  const std::vector<std::string>& header_;
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
                         const Dataset* source = nullptr) {
  ASSIGN_OR_RETURN(auto reader, source != nullptr ? ReopenSource(*source) : CsvReader::Open(path));
  std::vector<std::string_view> fields;
  ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
  if (!has_header) return absl::InvalidArgumentError(Cat(path, ": the file is empty"));
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
      std::string value(fields[col.csv_column]);
      auto [it, added] = dict[c].emplace(value, static_cast<int32_t>(col.values.size()));
      if (added) col.values.push_back(std::move(value));
      col.codes.push_back(it->second);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ReadHeader(const std::string& path) {
  ASSIGN_OR_RETURN(auto reader, CsvReader::Open(path));
  std::vector<std::string_view> fields;
  ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
  if (!has_header) return absl::InvalidArgumentError(Cat(path, ": the file is empty"));
  std::vector<std::string> header;
  for (std::string_view f : fields) header.emplace_back(f);
  return header;
}

// Join attributes: every released attribute of this job that the previous release also has.
absl::Status ResolveJoinAttributes(const JobSpec& spec, const Dataset& data, Resolver& resolver,
                                   SequentialModel* model) {
  for (const auto& a : spec.attributes()) {
    if (!resolver.Common(a.name())) continue;
    JoinAttribute j;
    j.name = a.name();
    if (a.role() == fedanon::v1::ROLE_QID) {
      j.qid = FindQid(data, a.name());
      if (j.qid < 0 || data.qids[j.qid].kind != QidKind::kTaxonomy) {
        return absl::InvalidArgumentError(Cat(
            "attribute '", a.name(), "' is in both releases (a join attribute) but is a QID ",
            "without a taxonomy here; sequential releases match join attributes through their ",
            "taxonomy (thesis §6.1.3): give it a taxonomy or drop the column from one release"));
      }
    } else {
      j.current_raw = resolver.CurrentColumn(a.name());
    }
    j.previous = resolver.PreviousColumn(a.name());
    model->join.push_back(std::move(j));
  }
  if (model->join.empty()) {
    return absl::InvalidArgumentError(
        Cat("the previous release ", model->previous_path,
            " has no column in common with the attributes this job releases; there is no join"));
  }
  return absl::OkStatus();
}

// Inconsistency rule `i` of the spec, with its attributes resolved (its values are resolved once
// the columns are read, by ResolveRuleValues).
absl::StatusOr<InconsistencyRule> ResolveRule(const JobSpec& spec, const Dataset& data, int i,
                                              Resolver& resolver, const SequentialModel& model) {
  const auto& in = spec.sequential().inconsistent(i);
  const std::string where = Cat("sequential.inconsistent rule ", i + 1);
  InconsistencyRule rule;
  rule.current_name = in.current();
  rule.previous_name = in.previous();
  const auto* a = FindAttribute(spec, in.current());
  if (a == nullptr || a->role() == fedanon::v1::ROLE_ID) {
    return absl::InvalidArgumentError(
        Cat(where, ": current '", in.current(), "' is not an attribute this job releases"));
  }
  if (resolver.PreviousCsvColumn(in.previous()) < 0) {
    return absl::InvalidArgumentError(Cat(where, ": previous '", in.previous(),
                                          "' is not a column of the previous release ",
                                          model.previous_path));
  }
  if (in.current() == in.previous()) {
    return absl::InvalidArgumentError(Cat(where, ": '", in.current(),
                                          "' is in both releases; the consistency predicate ",
                                          "already matches a common attribute with itself"));
  }
  if (a->role() == fedanon::v1::ROLE_QID) {
    rule.current_qid = FindQid(data, in.current());
    if (rule.current_qid < 0 || data.qids[rule.current_qid].kind != QidKind::kTaxonomy) {
      return absl::InvalidArgumentError(Cat(where, ": current '", in.current(),
                                            "' is a QID without a taxonomy; rules apply to ",
                                            "taxonomy QIDs and attributes released unchanged"));
    }
    const auto node = data.qids[rule.current_qid].taxonomy->Find(in.current_value());
    if (!node) {
      return absl::InvalidArgumentError(Cat(where, ": current_value '", in.current_value(),
                                            "' is not in the taxonomy of '", in.current(), "'"));
    }
    rule.current_value = *node;
  } else {
    rule.current_raw = resolver.CurrentColumn(in.current());
  }
  rule.previous = resolver.PreviousColumn(in.previous());
  return rule;
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
    if (y == "previous.@record") {
      t.y2_record = true;
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
          Cat(where, ": previous.", model.previous_columns[c].name, " is in both x and y"));
    }
  }
  t.description =
      Cat("<{", absl::StrJoin(s.x(), ", "), "}, {", absl::StrJoin(s.y(), ", "), "}, ", s.k(), ">");
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
    return absl::InvalidArgumentError(Cat(where, ": previous.",
                                          model.previous_columns[t.y_column].name,
                                          " is both in x and the sensitive attribute"));
  }
  t.description = Cat("<{", absl::StrJoin(s.x(), ", "), "}, ", s.attribute(), " in {",
                      absl::StrJoin(s.sensitive_values(), ", "), "}, ", s.max(), ">");
  return t;
}

// Reads the columns the model names; T1 rows follow Dataset::kept so that record indices agree
// with `data`.
absl::Status ReadReleases(const Dataset& data, SequentialModel* model) {
  for (const CodedColumn& c : model->current_columns) {
    if (c.csv_column < 0) {
      return absl::InvalidArgumentError(
          Cat(data.source_path, ": no column named '", c.name, "' in the header"));
    }
  }
  RETURN_IF_ERROR(ReadColumns(data.source_path, &data.kept, &model->current_columns,
                              &model->current_lines, &data));
  if (model->current_lines.size() != data.num_records) {
    return absl::InternalError(Cat(data.source_path, " changed while it was read"));
  }
  RETURN_IF_ERROR(
      ReadColumns(model->previous_path, nullptr, &model->previous_columns, &model->previous_lines));
  model->previous_records = model->previous_lines.size();
  if (model->previous_records == 0) {
    return absl::InvalidArgumentError(
        Cat(model->previous_path, ": the previous release has no records"));
  }
  return absl::OkStatus();
}

// The codes of the sensitive values of every confidentiality template.
absl::Status ResolveSensitiveCodes(const JobSpec& spec, const Dataset& data,
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
        return absl::InvalidArgumentError(
            Cat(TemplateWhere(false, conf_index), ": sensitive value '", v, "' does not occur in ",
                t.y_previous ? "previous." : "current.", col.name, " (",
                t.y_previous ? model->previous_path : data.source_path, ")"));
      }
      t.sensitive_codes.push_back(static_cast<int32_t>(it - col.values.begin()));
    }
    ++conf_index;
  }
  return absl::OkStatus();
}

// Maps every T2 value of a join attribute onto its T1 counterpart.
absl::Status MapJoinValues(const Dataset& data, SequentialModel* model) {
  for (JoinAttribute& j : model->join) {
    const CodedColumn& prev = model->previous_columns[j.previous];
    j.previous_to_current.assign(prev.values.size(), -1);
    for (size_t v = 0; v < prev.values.size(); ++v) {
      if (j.qid >= 0) {
        const std::optional<Taxonomy::NodeId> node =
            data.qids[j.qid].taxonomy->Find(prev.values[v]);
        if (!node) {
          const size_t first = static_cast<size_t>(
              std::find(prev.codes.begin(), prev.codes.end(), static_cast<int32_t>(v)) -
              prev.codes.begin());
          return absl::InvalidArgumentError(
              Cat(model->previous_path, ":", model->previous_lines[first], ":", prev.csv_column + 1,
                  ": value '", prev.values[v], "' of join attribute '", j.name,
                  "' is not in its taxonomy (neither a leaf nor a generalization)"));
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
absl::Status ResolveRuleValues(const JobSpec& spec, const Dataset& data, SequentialModel* model) {
  const auto& seq = spec.sequential();
  for (size_t i = 0; i < model->rules.size(); ++i) {
    InconsistencyRule& rule = model->rules[i];
    const auto& in = seq.inconsistent(static_cast<int>(i));
    if (rule.current_raw >= 0) {
      const auto& values = model->current_columns[rule.current_raw].values;
      auto it = std::find(values.begin(), values.end(), in.current_value());
      rule.current_value = it == values.end() ? -1 : static_cast<int32_t>(it - values.begin());
    }
    const CodedColumn& prev = model->previous_columns[rule.previous];
    const Taxonomy* tax = nullptr;
    for (const JoinAttribute& j : model->join) {
      if (j.name == in.previous() && j.qid >= 0) tax = data.qids[j.qid].taxonomy.get();
    }
    std::optional<Taxonomy::NodeId> d;
    if (tax != nullptr) {
      d = tax->Find(in.previous_value());
      if (!d) {
        return absl::InvalidArgumentError(Cat("sequential.inconsistent rule ", i + 1,
                                              ": previous_value '", in.previous_value(),
                                              "' is not in the taxonomy of '", in.previous(), "'"));
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

}  // namespace

absl::StatusOr<SequentialModel> LoadSequentialModel(const JobSpec& spec, const Dataset& data,
                                                    const std::string& previous_path) {
  SequentialModel model;
  model.previous_path = previous_path;
  ASSIGN_OR_RETURN(std::vector<std::string> header, ReadHeader(previous_path));
  Resolver resolver(spec, data, header, &model);

  // Resolve names first (in this order: the columns are numbered as they are first named).
  RETURN_IF_ERROR(ResolveJoinAttributes(spec, data, resolver, &model));
  const auto& seq = spec.sequential();
  for (int i = 0; i < seq.inconsistent_size(); ++i) {
    ASSIGN_OR_RETURN(InconsistencyRule rule, ResolveRule(spec, data, i, resolver, model));
    model.rules.push_back(std::move(rule));
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
  return model;
}

bool RuleForbids(const SequentialModel& model, const Dataset& data, int r, int32_t current,
                 int32_t previous) {
  const InconsistencyRule& rule = model.rules[r];
  if (!rule.previous_below[previous] || rule.current_value < 0) return false;
  if (rule.current_qid >= 0) {
    return data.qids[rule.current_qid].taxonomy->Generalizes(rule.current_value, current);
  }
  return current == rule.current_value;
}

bool JoinValuesMatch(const SequentialModel& model, const Dataset& data, int j, int32_t current,
                     int32_t previous) {
  const JoinAttribute& ja = model.join[j];
  const int32_t p = ja.previous_to_current[previous];
  if (ja.qid >= 0) {
    const Taxonomy& tax = *data.qids[ja.qid].taxonomy;
    return tax.Generalizes(current, p) || tax.Generalizes(p, current);
  }
  return p >= 0 && p == current;
}

}  // namespace fedanon::common
