#include "common/spec/job_spec_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "common/base/status_macros.h"
#include "common/base/string_views.h"
#include "common/spec/sequential_spec.h"
#include "common/spec/yaml_document.h"
#include "common/table/csv.h"
#include "common/table/dataset.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/reflection.h"
#include "google/protobuf/stubs/common.h"

namespace fedanon::spec {
namespace {

// Whether `text` is written as a decimal number: digits, sign, point and exponent only (so no hex,
// no "inf" or "nan"); the parsers below decide whether it is a well-formed one.
bool IsDecimalNumber(std::string_view text) {
  text = base::Sv(absl::StripAsciiWhitespace(base::Av(text)));
  return !text.empty() && text.find_first_not_of("0123456789+-.eE") == std::string_view::npos;
}

namespace pb = ::google::protobuf;

// numeric_cells: the default (common/engine/numeric_split.h, kDefaultNumericCells) and the limit.
constexpr uint32_t kDefaultNumericCellsInSpec = 32;
constexpr uint32_t kMaxNumericCells = 1 << 20;
using ::fedanon::v1::Attribute;
using ::fedanon::v1::JobSpec;
using ::fedanon::v1::Privacy;

// ---------------------------------------------------------------------------------------------
// Enum names: `role: qid` <-> ROLE_QID.

// "AttributeType" -> "ATTRIBUTE_TYPE_".
std::string EnumPrefix(const pb::EnumDescriptor& type) {
  std::string prefix;
  const std::string& name = type.name();
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (i > 0 && absl::ascii_isupper(c) && !absl::ascii_isupper(name[i - 1])) prefix.push_back('_');
    prefix.push_back(absl::ascii_toupper(c));
  }
  prefix.push_back('_');
  return prefix;
}

// The YAML spelling of an enum value: its name without the prefix, in lower case.
std::string EnumYamlName(const pb::EnumValueDescriptor& value) {
  absl::string_view name = value.name();
  absl::ConsumePrefix(&name, EnumPrefix(*value.type()));
  return absl::AsciiStrToLower(name);
}

// The YAML name of value `number` of `type`, or the number if `type` has no such value.
std::string EnumYamlName(const pb::EnumDescriptor& type, int number) {
  const pb::EnumValueDescriptor* value = type.FindValueByNumber(number);
  return value != nullptr ? EnumYamlName(*value) : absl::StrCat(number);
}

// Lower-case names of the specified (non-zero) values of `type`.
std::string EnumChoices(const pb::EnumDescriptor& type) {
  std::vector<std::string> names;
  for (int i = 0; i < type.value_count(); ++i) {
    if (type.value(i)->number() != 0) names.push_back(EnumYamlName(*type.value(i)));
  }
  return absl::StrJoin(names, ", ");
}

// Upper-case letters and digits of `text` (drops `_`, `-`, spaces, ...).
std::string Normalized(absl::string_view text) {
  std::string out;
  for (char c : text) {
    if (absl::ascii_isalnum(c)) out.push_back(absl::ascii_toupper(c));
  }
  return out;
}

// Matches `text` against the YAML names (or full names) of the specified values of `type`,
// ignoring case and any `_`, `-` or spaces: `infogain_privloss`, `InfoGain-PrivLoss`.
const pb::EnumValueDescriptor* FindEnumValue(const pb::EnumDescriptor& type,
                                             std::string_view text) {
  const std::string wanted = Normalized(base::Av(text));
  if (wanted.empty()) return nullptr;
  for (int i = 0; i < type.value_count(); ++i) {
    const pb::EnumValueDescriptor* value = type.value(i);
    if (value->number() == 0) continue;  // "unspecified" is not a choice
    if (Normalized(EnumYamlName(*value)) == wanted || Normalized(value->name()) == wanted) {
      return value;
    }
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// YAML -> message

const char* NodeKind(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Null:
      return "nothing";
    default:
      return "a scalar";
  }
}

std::string Join(std::string_view path, std::string_view name) {
  return path.empty() ? std::string(name) : base::Cat(path, ".", name);
}

// Converts one YAML document into a message through its descriptor, recording positions for
// error messages as "<source>:<line>:<column>: ...".
class YamlToMessage {
 public:
  explicit YamlToMessage(std::string_view source) : source_(source) {}

  // `path` names the message in errors ("" for the top level, "privacy", "attributes").
  absl::Status Message(const YAML::Node& node, std::string_view path, pb::Message* msg) const;

  absl::Status Error(const YAML::Mark& mark, std::string_view what) const {
    return YamlError(source_, mark, what);
  }

 private:
  absl::Status Field(const YAML::Node& value, const pb::FieldDescriptor& field,
                     const std::string& where, pb::Message* msg) const;
  absl::Status Repeated(const YAML::Node& value, const pb::FieldDescriptor& field,
                        const std::string& where, pb::Message* msg) const;
  absl::Status Map(const YAML::Node& value, const pb::FieldDescriptor& field,
                   const std::string& where, pb::Message* msg) const;
  // Sets (or for repeated fields adds) a non-message value.
  absl::Status Scalar(const YAML::Node& node, const pb::FieldDescriptor& field,
                      const std::string& where, pb::Message* msg) const;
  absl::Status Integer(const YAML::Node& node, const pb::FieldDescriptor& field,
                       const std::string& where, pb::Message* msg) const;

  std::string source_;
};

absl::Status YamlToMessage::Message(const YAML::Node& node, std::string_view path,
                                    pb::Message* msg) const {
  const std::string where = path.empty() ? "job spec" : std::string(path);
  if (node.IsNull()) return absl::OkStatus();
  if (!node.IsMap()) {
    return Error(node.Mark(), base::Cat(where, ": expected a map of keys, got ", NodeKind(node)));
  }
  const pb::Descriptor& descriptor = *msg->GetDescriptor();
  absl::flat_hash_set<const pb::FieldDescriptor*> seen;
  for (const auto& entry : node) {
    const YAML::Node& key = entry.first;
    if (!key.IsScalar()) {
      return Error(key.Mark(), base::Cat("keys in ", where, " must be plain names"));
    }
    const pb::FieldDescriptor* field = descriptor.FindFieldByName(key.Scalar());
    if (field == nullptr) {
      return Error(key.Mark(), base::Cat("unknown key '", key.Scalar(), "' in ", where));
    }
    if (!seen.insert(field).second) {
      return Error(key.Mark(), base::Cat("duplicate key '", key.Scalar(), "' in ", where));
    }
    RETURN_IF_ERROR(Field(entry.second, *field, Join(path, field->name()), msg));
  }
  return absl::OkStatus();
}

absl::Status YamlToMessage::Field(const YAML::Node& value, const pb::FieldDescriptor& field,
                                  const std::string& where, pb::Message* msg) const {
  if (value.IsNull()) return absl::OkStatus();  // `key:` or `key: ~` leaves the default
  if (field.is_map()) return Map(value, field, where, msg);
  if (field.is_repeated()) return Repeated(value, field, where, msg);
  if (field.cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
    return Message(value, where, msg->GetReflection()->MutableMessage(msg, &field));
  }
  return Scalar(value, field, where, msg);
}

absl::Status YamlToMessage::Repeated(const YAML::Node& value, const pb::FieldDescriptor& field,
                                     const std::string& where, pb::Message* msg) const {
  if (!value.IsSequence()) {
    return Error(value.Mark(), base::Cat(where, ": expected a list, got ", NodeKind(value)));
  }
  for (const YAML::Node& item : value) {
    if (item.IsNull()) return Error(item.Mark(), base::Cat(where, ": empty list entry"));
    if (field.cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      RETURN_IF_ERROR(Message(item, where, msg->GetReflection()->AddMessage(msg, &field)));
    } else {
      RETURN_IF_ERROR(Scalar(item, field, where, msg));
    }
  }
  return absl::OkStatus();
}

absl::Status YamlToMessage::Map(const YAML::Node& value, const pb::FieldDescriptor& field,
                                const std::string& where, pb::Message* msg) const {
  if (!value.IsMap()) {
    return Error(value.Mark(), base::Cat(where, ": expected a map, got ", NodeKind(value)));
  }
  const pb::FieldDescriptor& key_field = *field.message_type()->map_key();
  const pb::FieldDescriptor& value_field = *field.message_type()->map_value();
  for (const auto& entry : value) {
    pb::Message* item = msg->GetReflection()->AddMessage(msg, &field);
    RETURN_IF_ERROR(Scalar(entry.first, key_field, where, item));
    if (value_field.cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      RETURN_IF_ERROR(
          Message(entry.second, where, item->GetReflection()->MutableMessage(item, &value_field)));
    } else if (!entry.second.IsNull()) {
      RETURN_IF_ERROR(Scalar(entry.second, value_field, where, item));
    }
  }
  return absl::OkStatus();
}

absl::Status YamlToMessage::Scalar(const YAML::Node& node, const pb::FieldDescriptor& field,
                                   const std::string& where, pb::Message* msg) const {
  using F = pb::FieldDescriptor;
  const pb::Reflection& r = *msg->GetReflection();
  const bool add = field.is_repeated();
  if (!node.IsScalar()) {
    return Error(node.Mark(), base::Cat(where, ": expected a single value, got ", NodeKind(node)));
  }
  const std::string& text = node.Scalar();
  switch (field.cpp_type()) {
    case F::CPPTYPE_STRING:
      // Protobuf strings are UTF-8; other bytes would be lost on the way to YAML or the wire.
      if (field.type() == F::TYPE_STRING && !pb::internal::IsStructurallyValidUTF8(text)) {
        return Error(node.Mark(), base::Cat(where, ": text is not valid UTF-8"));
      }
      add ? r.AddString(msg, &field, text) : r.SetString(msg, &field, text);
      return absl::OkStatus();
    case F::CPPTYPE_BOOL: {
      const std::string lower = absl::AsciiStrToLower(text);
      bool value;
      if (lower == "true" || lower == "yes" || lower == "on") {
        value = true;
      } else if (lower == "false" || lower == "no" || lower == "off") {
        value = false;
      } else {
        return Error(node.Mark(), base::Cat(where, ": expected true or false, got '", text, "'"));
      }
      add ? r.AddBool(msg, &field, value) : r.SetBool(msg, &field, value);
      return absl::OkStatus();
    }
    case F::CPPTYPE_DOUBLE:
    case F::CPPTYPE_FLOAT: {
      double value;
      // epsilon (mohammed2011 §6) is a fraction of the total contribution: 0.01 or "1%".
      const bool percent = field.name() == "epsilon" && absl::EndsWith(text, "%");
      const std::string_view number =
          percent ? std::string_view(text).substr(0, text.size() - 1) : std::string_view(text);
      // Decimal only: SimpleAtod would also take hex floats ("0x1p-1").
      if (!IsDecimalNumber(number) ||
          !absl::SimpleAtod(absl::string_view(number.data(), number.size()), &value) ||
          !std::isfinite(value)) {
        return Error(node.Mark(),
                     base::Cat(where, ": expected a number",
                               field.name() == "epsilon" ? " or a percentage like 1%" : "",
                               ", got '", text, "'"));
      }
      if (percent) value /= 100;
      if (field.cpp_type() == F::CPPTYPE_DOUBLE) {
        add ? r.AddDouble(msg, &field, value) : r.SetDouble(msg, &field, value);
      } else {
        const auto f = static_cast<float>(value);
        add ? r.AddFloat(msg, &field, f) : r.SetFloat(msg, &field, f);
      }
      return absl::OkStatus();
    }
    case F::CPPTYPE_ENUM: {
      const pb::EnumValueDescriptor* value = FindEnumValue(*field.enum_type(), text);
      if (value == nullptr) {
        return Error(node.Mark(),
                     base::Cat(where, ": unknown value '", text,
                               "'; expected one of: ", EnumChoices(*field.enum_type())));
      }
      add ? r.AddEnum(msg, &field, value) : r.SetEnum(msg, &field, value);
      return absl::OkStatus();
    }
    case F::CPPTYPE_MESSAGE:
      return Error(node.Mark(), base::Cat(where, ": expected a map, got a scalar"));
    default:
      return Integer(node, field, where, msg);
  }
}

absl::Status YamlToMessage::Integer(const YAML::Node& node, const pb::FieldDescriptor& field,
                                    const std::string& where, pb::Message* msg) const {
  using F = pb::FieldDescriptor;
  const pb::Reflection& r = *msg->GetReflection();
  const bool add = field.is_repeated();
  const std::string& text = node.Scalar();
  const bool is_unsigned =
      field.cpp_type() == F::CPPTYPE_UINT32 || field.cpp_type() == F::CPPTYPE_UINT64;
  if (is_unsigned && absl::StartsWith(absl::StripLeadingAsciiWhitespace(text), "-")) {
    return Error(node.Mark(),
                 base::Cat(where, ": ", text, " is negative; expected a non-negative integer"));
  }
  auto out_of_range = [&] {
    return Error(node.Mark(), base::Cat(where, ": ", text, " is out of range"));
  };
  if (is_unsigned) {
    uint64_t value;
    if (!IsDecimalNumber(text) || !absl::SimpleAtoi(text, &value)) {
      return Error(node.Mark(),
                   base::Cat(where, ": expected a non-negative integer, got '", text, "'"));
    }
    if (field.cpp_type() == F::CPPTYPE_UINT32) {
      if (value > std::numeric_limits<uint32_t>::max()) return out_of_range();
      const auto v = static_cast<uint32_t>(value);
      add ? r.AddUInt32(msg, &field, v) : r.SetUInt32(msg, &field, v);
    } else {
      add ? r.AddUInt64(msg, &field, value) : r.SetUInt64(msg, &field, value);
    }
    return absl::OkStatus();
  }
  int64_t value;
  if (!IsDecimalNumber(text) || !absl::SimpleAtoi(text, &value)) {
    return Error(node.Mark(), base::Cat(where, ": expected an integer, got '", text, "'"));
  }
  if (field.cpp_type() == F::CPPTYPE_INT32) {
    if (value < std::numeric_limits<int32_t>::min() ||
        value > std::numeric_limits<int32_t>::max()) {
      return out_of_range();
    }
    const auto v = static_cast<int32_t>(value);
    add ? r.AddInt32(msg, &field, v) : r.SetInt32(msg, &field, v);
  } else {
    add ? r.AddInt64(msg, &field, value) : r.SetInt64(msg, &field, value);
  }
  return absl::OkStatus();
}

// Whether the top-level map gives `key` a (non-null) value.
bool HasKey(const YAML::Node& root, const char* key) {
  if (!root.IsMap()) return false;
  const YAML::Node value = root[key];
  return value.IsDefined() && !value.IsNull();
}

// Fills the documented defaults. Tokens are defaulted only when their key is absent, so that an
// explicit empty string (e.g. `missing_token: ""`: empty cells are missing) is kept.
void FillDefaults(const YAML::Node& root, JobSpec* spec) {
  if (spec->score() == fedanon::v1::SCORE_FUNCTION_UNSPECIFIED) {
    spec->set_score(fedanon::v1::SCORE_FUNCTION_INFOGAIN);
  }
  if (spec->missing() == fedanon::v1::MISSING_UNSPECIFIED) {
    spec->set_missing(fedanon::v1::MISSING_DROP);
  }
  if (!HasKey(root, "missing_token")) spec->set_missing_token("?");
  if (!HasKey(root, "suppression_token")) spec->set_suppression_token("*");
  for (Attribute& attribute : *spec->mutable_attributes()) {
    if (attribute.type() == fedanon::v1::ATTRIBUTE_TYPE_UNSPECIFIED) {
      attribute.set_type(fedanon::v1::ATTRIBUTE_TYPE_CATEGORICAL);
    }
  }
  if (spec->privacy().model() == fedanon::v1::PRIVACY_MODEL_UNSPECIFIED) {
    spec->mutable_privacy()->set_model(fedanon::v1::PRIVACY_MODEL_LKC);
  }
  // Binned numeric split search by default; a sequential release (one data holder, its own loop)
  // searches thresholds per value.
  if (spec->numeric_split() == fedanon::v1::NUMERIC_SPLIT_UNSPECIFIED) {
    spec->set_numeric_split(spec->has_sequential() ? fedanon::v1::NUMERIC_SPLIT_EXACT
                                                   : fedanon::v1::NUMERIC_SPLIT_BINNED);
  }
  if (spec->numeric_split() == fedanon::v1::NUMERIC_SPLIT_BINNED &&
      !HasKey(root, "numeric_cells")) {
    spec->set_numeric_cells(kDefaultNumericCellsInSpec);
  }
}

// The numeric split keys, checked where the YAML says them (line:column).
absl::Status CheckNumericSplitKeys(const YAML::Node& root, const YamlToMessage& parser,
                                   const JobSpec& spec) {
  const bool exact = spec.numeric_split() == fedanon::v1::NUMERIC_SPLIT_EXACT;
  if (HasKey(root, "numeric_split") && spec.has_sequential() && !exact) {
    return parser.Error(root["numeric_split"].Mark(),
                        "numeric_split: binned does not apply to sequential releases (a single "
                        "data holder; thresholds are searched per value): omit it or say exact");
  }
  for (const char* key : {"numeric_cells", "min_split_bin"}) {
    if (!HasKey(root, key)) continue;
    const YAML::Mark mark = root[key].Mark();
    if (exact) {
      return parser.Error(mark, base::Cat(key, " applies to numeric_split: binned only"));
    }
    const uint32_t value =
        std::string_view(key) == "numeric_cells" ? spec.numeric_cells() : spec.min_split_bin();
    if (value < 1) {
      return parser.Error(mark, base::Cat(key, " = 0 must be at least 1",
                                          std::string_view(key) == "min_split_bin"
                                              ? " (omit it to use the privacy model's K)"
                                              : ""));
    }
    if (std::string_view(key) == "numeric_cells" && value > kMaxNumericCells) {
      return parser.Error(
          mark, base::Cat("numeric_cells = ", value, " exceeds the limit of ", kMaxNumericCells));
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Validation

// The attributes by name and role.
struct Attributes {
  absl::flat_hash_map<std::string_view, const Attribute*> by_name;
  std::vector<std::string_view> qids;
  std::vector<std::string_view> classes;
  std::vector<std::string_view> sensitive;
};

std::string Quoted(const std::vector<std::string_view>& names) {
  return base::Cat("'", absl::StrJoin(names, "', '", base::kViewFormatter), "'");
}

absl::Status ValidateAttribute(const Attribute& a) {
  using fedanon::v1::ATTRIBUTE_TYPE_CONTINUOUS;
  if (a.role() == fedanon::v1::ROLE_UNSPECIFIED) {
    return absl::InvalidArgumentError(base::Cat(
        "attribute '", a.name(), "' has no role (role: ",
        absl::StrReplaceAll(EnumChoices(*fedanon::v1::Role_descriptor()), {{", ", "|"}}), ")"));
  }
  // A sensitive attribute's taxonomy serves t-closeness's hierarchical distance (checked with the
  // privacy model, DistributionModelIssue).
  if (!a.taxonomy().empty() && a.role() != fedanon::v1::ROLE_QID &&
      a.role() != fedanon::v1::ROLE_SENSITIVE) {
    return absl::InvalidArgumentError(
        base::Cat("attribute '", a.name(), "' has a taxonomy but role ",
                  EnumYamlName(*fedanon::v1::Role_descriptor(), a.role()),
                  "; taxonomies apply to QID attributes only"));
  }
  if (a.range_size() != 0 && a.type() != ATTRIBUTE_TYPE_CONTINUOUS) {
    return absl::InvalidArgumentError(base::Cat(
        "attribute '", a.name(), "' has a range but is not continuous (type: continuous)"));
  }
  if (a.range_size() != 0 && (a.range_size() != 2 || !(a.range(0) < a.range(1)))) {
    return absl::InvalidArgumentError(
        base::Cat("attribute '", a.name(), "': range must be empty or [low, high] with low < ",
                  "high, got [", absl::StrJoin(a.range(), ", "), "]"));
  }
  // A width that overflows (e.g. [-1e308, 1e308]) would make every interval computation inf/NaN.
  if (a.range_size() == 2 && !std::isfinite(a.range(1) - a.range(0))) {
    return absl::InvalidArgumentError(base::Cat("attribute '", a.name(), "': range [", a.range(0),
                                                ", ", a.range(1),
                                                "] is too wide (its width overflows)"));
  }
  if (!(a.precision() >= 0)) {
    return absl::InvalidArgumentError(
        base::Cat("attribute '", a.name(), "': precision must be positive, got ", a.precision()));
  }
  if (a.precision() > 0 && a.type() != ATTRIBUTE_TYPE_CONTINUOUS) {
    return absl::InvalidArgumentError(base::Cat("attribute '", a.name(),
                                                "' has a precision but is not continuous "
                                                "(type: continuous)"));
  }
  // Linear: a hash set, never a scan per value (a spec may list many thousands).
  absl::flat_hash_set<std::string_view> values;
  values.reserve(a.values_size());
  for (const std::string& v : a.values()) {
    if (!values.insert(v).second) {
      return absl::InvalidArgumentError(
          base::Cat("attribute '", a.name(), "': value '", v, "' is listed twice in values"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Attributes> IndexAttributes(const JobSpec& spec) {
  Attributes index;
  for (int i = 0; i < spec.attributes_size(); ++i) {
    const Attribute& a = spec.attributes(i);
    if (a.name().empty()) {
      return absl::InvalidArgumentError(base::Cat("attribute ", i + 1, " has an empty name"));
    }
    if (!index.by_name.emplace(a.name(), &a).second) {
      return absl::InvalidArgumentError(base::Cat("attribute '", a.name(), "' is listed twice"));
    }
    RETURN_IF_ERROR(ValidateAttribute(a));
    if (a.role() == fedanon::v1::ROLE_QID) index.qids.push_back(a.name());
    if (a.role() == fedanon::v1::ROLE_CLASS) index.classes.push_back(a.name());
    if (a.role() == fedanon::v1::ROLE_SENSITIVE) index.sensitive.push_back(a.name());
  }
  if (index.qids.empty()) {
    return absl::InvalidArgumentError("the job has no QID attribute (an attribute with role qid)");
  }
  if (index.classes.size() > 1) {
    return absl::InvalidArgumentError(base::Cat("attributes ", Quoted(index.classes),
                                                " all have role class; at most one is allowed"));
  }
  return index;
}

absl::Status ValidateScore(const JobSpec& spec, const Attributes& index) {
  const fedanon::v1::ScoreFunction score = spec.score();
  if (score == fedanon::v1::SCORE_FUNCTION_DISCERNIBILITY ||
      score == fedanon::v1::SCORE_FUNCTION_DISTORTION || !index.classes.empty()) {
    return absl::OkStatus();
  }
  const std::string name = score == fedanon::v1::SCORE_FUNCTION_UNSPECIFIED
                               ? "infogain"
                               : EnumYamlName(*fedanon::v1::ScoreFunction_descriptor(), score);
  return absl::InvalidArgumentError(
      base::Cat("score ", name, " needs exactly one attribute with role class, found none"));
}

// Checks the sensitive attribute named by `field` (`name`; empty: the single one) when
// `values_given`.
absl::Status ValidateSensitive(std::string_view field, std::string_view name, bool values_given,
                               std::string_view values_field, const Attributes& index) {
  if (!name.empty()) {
    auto it = index.by_name.find(name);
    if (it == index.by_name.end() || it->second->role() != fedanon::v1::ROLE_SENSITIVE) {
      return absl::InvalidArgumentError(
          base::Cat(field, " '", name, "' is not an attribute with role sensitive"));
    }
    return absl::OkStatus();
  }
  if (!values_given) return absl::OkStatus();
  if (index.sensitive.empty()) {
    return absl::InvalidArgumentError(
        base::Cat(values_field, " given but no attribute has role sensitive"));
  }
  if (index.sensitive.size() > 1) {
    return absl::InvalidArgumentError(base::Cat(field, " is empty but there are ",
                                                index.sensitive.size(), " sensitive attributes (",
                                                Quoted(index.sensitive), "); name one"));
  }
  return absl::OkStatus();
}

absl::Status ValidateLkc(const Privacy& p, const Attributes& index) {
  if (p.templates_size() != 0 || p.confidence_size() != 0) {
    return absl::InvalidArgumentError(
        "privacy.templates and privacy.confidence are only used with privacy.model: templates");
  }
  if (p.l() < 1) {
    return absl::InvalidArgumentError(base::Cat("privacy.L = ", p.l(), " must be >= 1"));
  }
  if (p.l() > index.qids.size()) {
    return absl::InvalidArgumentError(base::Cat(
        "privacy.L = ", p.l(), " exceeds the number of QID attributes (", index.qids.size(), ")"));
  }
  if (p.k() < 1) {
    return absl::InvalidArgumentError(base::Cat("privacy.K = ", p.k(), " must be >= 1"));
  }
  const bool has_values = p.sensitive_values_size() != 0;
  if ((has_values || p.c() != 0) && !(p.c() > 0 && p.c() <= 1)) {
    return absl::InvalidArgumentError(base::Cat("privacy.C = ", p.c(), " must be in (0, 1]"));
  }
  if (p.c() != 0 && p.c() < 1 && !has_values) {
    return absl::InvalidArgumentError(
        base::Cat("privacy.C = ", p.c(), " has no effect without privacy.sensitive_values"));
  }
  return ValidateSensitive("privacy.sensitive_attribute", p.sensitive_attribute(), has_values,
                           "privacy.sensitive_values", index);
}

// The QID list of template `what` (e.g. "template 2"): non-empty, known QIDs, no repeats.
absl::Status ValidateTemplateQid(std::string_view what,
                                 const pb::RepeatedPtrField<std::string>& qid,
                                 const Attributes& index) {
  if (qid.empty()) return absl::InvalidArgumentError(base::Cat(what, " has no QID attributes"));
  absl::flat_hash_set<std::string_view> seen;
  for (const std::string& name : qid) {
    auto it = index.by_name.find(name);
    if (it == index.by_name.end()) {
      return absl::InvalidArgumentError(
          base::Cat(what, " names unknown QID attribute '", name, "'"));
    }
    if (it->second->role() != fedanon::v1::ROLE_QID) {
      return absl::InvalidArgumentError(
          base::Cat(what, " names attribute '", name, "', which is not a QID attribute"));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(base::Cat(what, " lists '", name, "' twice"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateTemplates(const Privacy& p, const Attributes& index) {
  if (p.l() != 0 || p.k() != 0 || p.c() != 0 || p.sensitive_values_size() != 0 ||
      !p.sensitive_attribute().empty()) {
    return absl::InvalidArgumentError(
        "privacy.L, K, C, sensitive_values and sensitive_attribute are only used with "
        "privacy.model: lkc; use privacy.templates and privacy.confidence");
  }
  if (p.templates_size() == 0 && p.confidence_size() == 0) {
    return absl::InvalidArgumentError(
        "privacy.model templates needs at least one entry in privacy.templates or "
        "privacy.confidence");
  }
  for (int i = 0; i < p.templates_size(); ++i) {
    const std::string what = base::Cat("template ", i + 1);
    RETURN_IF_ERROR(ValidateTemplateQid(what, p.templates(i).qid(), index));
    if (p.templates(i).k() < 1) {
      return absl::InvalidArgumentError(
          base::Cat(what, ": k = ", p.templates(i).k(), " must be >= 1"));
    }
  }
  for (int i = 0; i < p.confidence_size(); ++i) {
    const fedanon::v1::ConfidenceTemplate& c = p.confidence(i);
    const std::string what = base::Cat("confidence template ", i + 1);
    RETURN_IF_ERROR(ValidateTemplateQid(what, c.qid(), index));
    if (c.sensitive_values().empty()) {
      return absl::InvalidArgumentError(base::Cat(what, " has no sensitive_values"));
    }
    RETURN_IF_ERROR(ValidateSensitive(base::Cat(what, ": attribute"), c.attribute(), true,
                                      base::Cat(what, ": sensitive_values"), index));
    if (!(c.max() > 0 && c.max() <= 1)) {
      return absl::InvalidArgumentError(base::Cat(what, ": max = ", c.max(), " must be in (0, 1]"));
    }
  }
  return absl::OkStatus();
}

// ldiversity and tcloseness (docs/job-spec.md): what is wrong with the privacy section, and
// where — a key of `privacy` or of one attribute — so that a YAML spec gets its line and column.
struct SpecIssue {
  std::string message;
  std::string privacy_key;    // a key of `privacy`, or empty
  int attribute = -1;         // else: the attribute (index) ...
  std::string attribute_key;  // ... and its key (empty: the attribute itself)
};

SpecIssue PrivacyIssue(std::string key, std::string message) {
  return SpecIssue{std::move(message), std::move(key), -1, ""};
}

SpecIssue AttributeIssue(int index, std::string key, std::string message) {
  return SpecIssue{std::move(message), "", index, std::move(key)};
}

// l-diversity's own keys, against the sensitive attribute `s_attr` (index `sensitive`).
std::optional<SpecIssue> LDiversityIssue(const Privacy& p, const Attribute& s_attr) {
  const int domain = s_attr.values_size();
  if (p.t() != 0 || p.distance() != fedanon::v1::GROUND_DISTANCE_UNSPECIFIED) {
    return PrivacyIssue(p.t() != 0 ? "t" : "distance",
                        "privacy.t and distance are used only with privacy.model: tcloseness");
  }
  const bool entropy = p.variant() == fedanon::v1::DIVERSITY_VARIANT_ENTROPY;
  const bool recursive = p.variant() == fedanon::v1::DIVERSITY_VARIANT_RECURSIVE;
  const double l = p.diversity();
  if (entropy ? !(l > 1) : !(l >= 2 && l == std::floor(l))) {
    return PrivacyIssue("diversity",
                        base::Cat("privacy.diversity = ", l, " must be ",
                                  entropy ? "a number above 1 (entropy >= log(diversity))"
                                          : "a whole number of at least 2"));
  }
  if (l > domain) {
    return PrivacyIssue("diversity", base::Cat("privacy.diversity = ", l, " exceeds the ", domain,
                                               " declared values of sensitive attribute '",
                                               s_attr.name(), "': no group can meet it"));
  }
  if (recursive && !(p.recursive_c() > 0)) {
    return PrivacyIssue("recursive_c", base::Cat("privacy.recursive_c = ", p.recursive_c(),
                                                 " must be positive (variant: recursive)"));
  }
  if (!recursive && p.recursive_c() != 0) {
    return PrivacyIssue("recursive_c", "privacy.recursive_c is used only with variant: recursive");
  }
  return std::nullopt;
}

// t-closeness's own keys, against the sensitive attribute `s_attr` (index `sensitive`).
std::optional<SpecIssue> TClosenessIssue(const JobSpec& spec, const Attribute& s_attr,
                                         int sensitive) {
  const Privacy& p = spec.privacy();
  const bool hierarchical = p.distance() == fedanon::v1::GROUND_DISTANCE_HIERARCHICAL;
  if (p.variant() != fedanon::v1::DIVERSITY_VARIANT_UNSPECIFIED || p.diversity() != 0 ||
      p.recursive_c() != 0) {
    return PrivacyIssue(p.variant() != fedanon::v1::DIVERSITY_VARIANT_UNSPECIFIED ? "variant"
                        : p.diversity() != 0                                      ? "diversity"
                                                                                  : "recursive_c",
                        "privacy.variant, diversity and recursive_c are used only with "
                        "privacy.model: ldiversity");
  }
  if (!(p.t() >= 0 && p.t() <= 1)) {
    return PrivacyIssue("t", base::Cat("privacy.t = ", p.t(), " must be in [0, 1]"));
  }
  if (hierarchical && s_attr.taxonomy().empty()) {
    return AttributeIssue(
        sensitive, "",
        base::Cat("distance: hierarchical needs a taxonomy of sensitive attribute '", s_attr.name(),
                  "' (taxonomy: FILE, ARX format)"));
  }
  if (p.distance() == fedanon::v1::GROUND_DISTANCE_ORDERED) {
    // Numbers must be listed in their order: the distance is their rank difference.
    bool numbers = true;
    std::vector<double> parsed;
    for (const std::string& v : s_attr.values()) {
      double x;
      if (!IsDecimalNumber(v) || !absl::SimpleAtod(v, &x)) {
        numbers = false;
        break;
      }
      parsed.push_back(x);
    }
    for (size_t i = 1; numbers && i < parsed.size(); ++i) {
      if (!(parsed[i - 1] < parsed[i])) {
        return AttributeIssue(
            sensitive, "values",
            base::Cat("distance: ordered ranks the values of sensitive attribute '", s_attr.name(),
                      "' in the order listed; these are numbers, so list them ascending ('",
                      s_attr.values(static_cast<int>(i - 1)), "' comes before '",
                      s_attr.values(static_cast<int>(i)), "')"));
      }
    }
  }
  // t-closeness implies no group size: a horizontal job's leader decodes each candidate
  // group's sensitive histogram only for groups of at least K records.
  if (spec.partitioning() == fedanon::v1::PARTITIONING_HORIZONTAL && p.k() < 2) {
    return PrivacyIssue(
        p.k() == 0 ? "model" : "K",
        base::Cat(
            "privacy.model tcloseness in a horizontal job needs K >= 2: its leader decodes the "
            "sensitive histograms of candidate groups, only of groups of at least K records "
            "(docs/threat-model.md)"));
  }
  return std::nullopt;
}

// A sensitive attribute's taxonomy is only for the hierarchical distance, of the model's
// sensitive attribute (index `sensitive`).
std::optional<SpecIssue> SensitiveTaxonomyIssue(const JobSpec& spec, int sensitive,
                                                bool hierarchical) {
  for (int i = 0; i < spec.attributes_size(); ++i) {
    const Attribute& a = spec.attributes(i);
    if (a.role() != fedanon::v1::ROLE_SENSITIVE || a.taxonomy().empty()) continue;
    if (!hierarchical || i != sensitive) {
      return AttributeIssue(
          i, "taxonomy",
          base::Cat(
              "attribute '", a.name(),
              "' has a taxonomy but role sensitive; a sensitive attribute's taxonomy is used only "
              "by privacy.model tcloseness with distance: hierarchical"));
    }
  }
  return std::nullopt;
}

// A key of the LKC or templates models given with distribution model `model`.
std::optional<SpecIssue> OtherModelsKeyIssue(const Privacy& p, const std::string& model) {
  if (p.l() != 0) {
    return PrivacyIssue("L", base::Cat("privacy.L is not used with privacy.model: ", model,
                                       " (its groups are those of every QID attribute together)"));
  }
  if (p.c() != 0 || p.sensitive_values_size() != 0) {
    return PrivacyIssue(
        p.c() != 0 ? "C" : "sensitive_values",
        base::Cat("privacy.C and sensitive_values are not used with privacy.model: ", model,
                  " (it bounds the whole distribution of the sensitive "
                  "attribute)"));
  }
  if (p.templates_size() != 0 || p.confidence_size() != 0) {
    return PrivacyIssue(p.templates_size() != 0 ? "templates" : "confidence",
                        base::Cat("privacy.templates and privacy.confidence are not used with "
                                  "privacy.model: ",
                                  model));
  }
  return std::nullopt;
}

std::optional<SpecIssue> DistributionModelIssue(const JobSpec& spec) {
  const Privacy& p = spec.privacy();
  const bool ldiversity = p.model() == fedanon::v1::PRIVACY_MODEL_LDIVERSITY;
  const bool tcloseness = p.model() == fedanon::v1::PRIVACY_MODEL_TCLOSENESS;
  const bool hierarchical = tcloseness && p.distance() == fedanon::v1::GROUND_DISTANCE_HIERARCHICAL;
  // The model's sensitive attribute: named, or the single one with role sensitive.
  int sensitive = -1;
  int sensitive_count = 0;
  for (int i = 0; i < spec.attributes_size(); ++i) {
    const Attribute& a = spec.attributes(i);
    if (a.role() == fedanon::v1::ROLE_SENSITIVE) ++sensitive_count;
    if (!p.sensitive_attribute().empty() ? a.name() == p.sensitive_attribute()
                                         : a.role() == fedanon::v1::ROLE_SENSITIVE) {
      sensitive = i;
    }
  }
  if (auto issue = SensitiveTaxonomyIssue(spec, sensitive, hierarchical)) return issue;
  if (!ldiversity && !tcloseness) {
    for (const char* key : {"variant", "diversity", "recursive_c", "t", "distance"}) {
      const pb::FieldDescriptor* f = Privacy::descriptor()->FindFieldByName(key);
      if (Privacy::GetReflection()->HasField(p, f)) {
        return PrivacyIssue(
            key, base::Cat("privacy.", key,
                           " is used only with privacy.model: ldiversity or tcloseness"));
      }
    }
    return std::nullopt;
  }
  const std::string model = ldiversity ? "ldiversity" : "tcloseness";
  if (auto issue = OtherModelsKeyIssue(p, model)) return issue;
  if (sensitive < 0) {
    if (!p.sensitive_attribute().empty()) {
      return PrivacyIssue("sensitive_attribute",
                          base::Cat("privacy.sensitive_attribute '", p.sensitive_attribute(),
                                    "' is not an attribute"));
    }
    return PrivacyIssue(
        "model", base::Cat("privacy.model ", model, " needs an attribute with role sensitive"));
  }
  const Attribute& s_attr = spec.attributes(sensitive);
  if (s_attr.role() != fedanon::v1::ROLE_SENSITIVE) {
    return PrivacyIssue("sensitive_attribute",
                        base::Cat("privacy.sensitive_attribute '", s_attr.name(),
                                  "' is not an attribute with role sensitive"));
  }
  if (p.sensitive_attribute().empty() && sensitive_count > 1) {
    return PrivacyIssue("model", base::Cat("privacy.model ", model, ": there are ", sensitive_count,
                                           " sensitive attributes; name one in "
                                           "privacy.sensitive_attribute"));
  }
  const int domain = s_attr.values_size();
  if (domain == 0) {
    return AttributeIssue(sensitive, "",
                          base::Cat("privacy.model ", model,
                                    " needs the values of sensitive attribute '", s_attr.name(),
                                    "' listed (values: [...]): every group's "
                                    "distribution is counted over them"));
  }
  if (static_cast<size_t>(domain) > table::kMaxSensitiveDomain) {
    return AttributeIssue(sensitive, "values",
                          base::Cat("sensitive attribute '", s_attr.name(), "' lists ", domain,
                                    " values; privacy.model ", model, " supports at most ",
                                    table::kMaxSensitiveDomain));
  }
  if (spec.recoding() == fedanon::v1::RECODING_LOCAL) {
    return PrivacyIssue("model",
                        base::Cat("privacy.model ", model,
                                  " runs with global recoding only (recoding: local is not "
                                  "supported for it)"));
  }
  if (spec.has_sequential()) {
    return PrivacyIssue(
        "model", base::Cat("privacy.model ", model, " does not apply to sequential releases"));
  }
  return ldiversity ? LDiversityIssue(p, s_attr) : TClosenessIssue(spec, s_attr, sensitive);
}

// ---------------------------------------------------------------------------------------------
// Message -> YAML

// Shortest text that reads back as the same double.
std::string FormatDouble(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

void EmitString(YAML::Emitter& out, const std::string& s) {
  const bool quote = s.empty() || YAML::IsNullString(s) || absl::ascii_isspace(s.front()) ||
                     absl::ascii_isspace(s.back());
  if (quote) out << YAML::DoubleQuoted;
  out << s;
}

void EmitMessage(YAML::Emitter& out, const pb::Message& msg, bool flow);

void EmitValue(YAML::Emitter& out, const pb::Message& msg, const pb::FieldDescriptor& field,
               int index) {
  using F = pb::FieldDescriptor;
  const pb::Reflection& r = *msg.GetReflection();
  const bool rep = index >= 0;
  switch (field.cpp_type()) {
    case F::CPPTYPE_STRING:
      EmitString(out, rep ? r.GetRepeatedString(msg, &field, index) : r.GetString(msg, &field));
      break;
    case F::CPPTYPE_BOOL:
      out << ((rep ? r.GetRepeatedBool(msg, &field, index) : r.GetBool(msg, &field)) ? "true"
                                                                                     : "false");
      break;
    case F::CPPTYPE_DOUBLE:
      out << FormatDouble(rep ? r.GetRepeatedDouble(msg, &field, index) : r.GetDouble(msg, &field));
      break;
    case F::CPPTYPE_FLOAT:
      out << FormatDouble(rep ? r.GetRepeatedFloat(msg, &field, index) : r.GetFloat(msg, &field));
      break;
    case F::CPPTYPE_INT32:
      out << (rep ? r.GetRepeatedInt32(msg, &field, index) : r.GetInt32(msg, &field));
      break;
    case F::CPPTYPE_INT64:
      out << (rep ? r.GetRepeatedInt64(msg, &field, index) : r.GetInt64(msg, &field));
      break;
    case F::CPPTYPE_UINT32:
      out << (rep ? r.GetRepeatedUInt32(msg, &field, index) : r.GetUInt32(msg, &field));
      break;
    case F::CPPTYPE_UINT64:
      out << (rep ? r.GetRepeatedUInt64(msg, &field, index) : r.GetUInt64(msg, &field));
      break;
    case F::CPPTYPE_ENUM: {
      const pb::EnumValueDescriptor* value =
          rep ? r.GetRepeatedEnum(msg, &field, index) : r.GetEnum(msg, &field);
      out << EnumYamlName(*value);
      break;
    }
    case F::CPPTYPE_MESSAGE: {
      const pb::Message& sub =
          rep ? r.GetRepeatedMessage(msg, &field, index) : r.GetMessage(msg, &field);
      // List entries without nested messages print on one line: `- {name: age, role: qid}`.
      bool flow = rep;
      for (int i = 0; i < sub.GetDescriptor()->field_count(); ++i) {
        if (sub.GetDescriptor()->field(i)->cpp_type() == F::CPPTYPE_MESSAGE) flow = false;
      }
      EmitMessage(out, sub, flow);
      break;
    }
  }
}

void EmitMap(YAML::Emitter& out, const pb::Message& msg, const pb::FieldDescriptor& field) {
  const pb::Reflection& r = *msg.GetReflection();
  out << YAML::BeginMap;
  for (int i = 0; i < r.FieldSize(msg, &field); ++i) {
    const pb::Message& entry = r.GetRepeatedMessage(msg, &field, i);
    out << YAML::Key;
    EmitValue(out, entry, *field.message_type()->map_key(), -1);
    out << YAML::Value;
    EmitValue(out, entry, *field.message_type()->map_value(), -1);
  }
  out << YAML::EndMap;
}

void EmitMessage(YAML::Emitter& out, const pb::Message& msg, bool flow) {
  const pb::Reflection& r = *msg.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  r.ListFields(msg, &fields);
  // Tokens are defaulted when absent, so an empty one must be written to survive a round trip.
  if (msg.GetDescriptor() == JobSpec::descriptor()) {
    for (const char* name : {"missing_token", "suppression_token"}) {
      const pb::FieldDescriptor* field = JobSpec::descriptor()->FindFieldByName(name);
      if (std::find(fields.begin(), fields.end(), field) == fields.end()) fields.push_back(field);
    }
    std::sort(fields.begin(), fields.end(),
              [](const auto* a, const auto* b) { return a->number() < b->number(); });
  }
  if (flow) out << YAML::Flow;
  out << YAML::BeginMap;
  for (const pb::FieldDescriptor* field : fields) {
    out << YAML::Key << field->name() << YAML::Value;
    if (field->is_map()) {
      EmitMap(out, msg, *field);
    } else if (field->is_repeated()) {
      if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (int i = 0; i < r.FieldSize(msg, field); ++i) EmitValue(out, msg, *field, i);
      out << YAML::EndSeq;
    } else {
      EmitValue(out, msg, *field, -1);
    }
  }
  out << YAML::EndMap;
}

}  // namespace

absl::StatusOr<JobSpec> ParseJobSpecYaml(std::string_view yaml, std::string_view source_name) {
  ASSIGN_OR_RETURN(const YAML::Node root, ParseYaml(yaml, source_name));
  const YamlToMessage parser(source_name);
  try {
    if (!root.IsDefined() || root.IsNull()) {
      return absl::InvalidArgumentError(base::Cat(source_name, ": the job spec is empty"));
    }
    JobSpec spec;
    RETURN_IF_ERROR(parser.Message(root, "", &spec));
    FillDefaults(root, &spec);
    RETURN_IF_ERROR(CheckNumericSplitKeys(root, parser, spec));
    if (HasKey(root, "max_records_per_party") && spec.max_records_per_party() == 0) {
      return parser.Error(root["max_records_per_party"].Mark(),
                          base::Cat("max_records_per_party = 0 must be at least 1 (omit it for the "
                                    "default of ",
                                    kDefaultMaxRecordsPerParty, ")"));
    }
    if (std::optional<SpecIssue> issue = DistributionModelIssue(spec)) {
      // Where the YAML says it: the key, else the map that lacks it (const lookups only: they
      // never add a key).
      auto child = [](const YAML::Node& node, const std::string& key) -> std::optional<YAML::Node> {
        if (!node.IsMap()) return std::nullopt;
        const YAML::Node value = node[key];
        if (!value.IsDefined()) return std::nullopt;
        return value;
      };
      YAML::Mark mark = root.Mark();
      const std::optional<YAML::Node> privacy = child(root, "privacy");
      const std::optional<YAML::Node> attributes = child(root, "attributes");
      if (!issue->privacy_key.empty() && privacy.has_value() && privacy->IsMap()) {
        const std::optional<YAML::Node> key = child(*privacy, issue->privacy_key);
        mark = key.has_value() ? key->Mark() : privacy->Mark();
      } else if (issue->attribute >= 0 && attributes.has_value() && attributes->IsSequence() &&
                 attributes->size() > static_cast<size_t>(issue->attribute)) {
        const YAML::Node attribute = (*attributes)[static_cast<size_t>(issue->attribute)];
        std::optional<YAML::Node> key;
        if (!issue->attribute_key.empty()) key = child(attribute, issue->attribute_key);
        mark = key.has_value() ? key->Mark() : attribute.Mark();
      }
      return parser.Error(mark, issue->message);
    }
    return spec;
  } catch (const YAML::Exception& e) {
    return parser.Error(e.mark, e.msg);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(base::Cat(source_name, ": ", e.what()));
  }
}

absl::StatusOr<JobSpec> LoadJobSpec(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text,
                   base::ReadFile(path, base::ReadFileOptions{.max_bytes = base::kMaxSpecBytes,
                                                              .what = "job spec"}));
  ASSIGN_OR_RETURN(JobSpec spec, ParseJobSpecYaml(text, path));
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  for (Attribute& attribute : *spec.mutable_attributes()) {
    const std::filesystem::path taxonomy(attribute.taxonomy());
    if (taxonomy.empty() || taxonomy.is_absolute() || dir.empty()) continue;
    attribute.set_taxonomy((dir / taxonomy).lexically_normal().string());
  }
  for (fedanon::v1::HierarchyDefinition& h : *spec.mutable_hierarchy()) {
    const std::filesystem::path values(h.values());
    if (values.empty() || values.is_absolute() || dir.empty()) continue;
    h.set_values((dir / values).lexically_normal().string());
  }
  return spec;
}

// The participation strategy (mohammed2011 §6) is a vertical-job option.
absl::Status ValidateParticipation(const JobSpec& spec) {
  if (!std::isfinite(spec.epsilon()) || spec.epsilon() < 0 || spec.epsilon() > 1) {
    return absl::InvalidArgumentError(
        base::Cat("epsilon must be a non-negative number of at most 1: a fraction of the total "
                  "contribution (0.01 or 1%; at most 100%), got ",
                  spec.epsilon()));
  }
  const bool game_theoretic = spec.participation() == fedanon::v1::PARTICIPATION_GAME_THEORETIC;
  if (game_theoretic && spec.partitioning() != fedanon::v1::PARTITIONING_VERTICAL) {
    return absl::InvalidArgumentError(
        "participation: game_theoretic applies to vertical jobs only (partitioning: vertical)");
  }
  if (!game_theoretic && spec.epsilon() != 0) {
    return absl::InvalidArgumentError("epsilon is used only with participation: game_theoretic");
  }
  // A horizontal job's recipient receives the union shuffled: the key would promise nothing.
  if (spec.release().allow_data_holding_recipient() &&
      spec.partitioning() != fedanon::v1::PARTITIONING_VERTICAL) {
    return absl::InvalidArgumentError(
        "release: allow_data_holding_recipient applies to vertical jobs only (partitioning: "
        "vertical)");
  }
  return absl::OkStatus();
}

namespace {

// The numeric split keys of a spec that did not come from YAML (e.g. a submitted message).
absl::Status ValidateNumericSplit(const JobSpec& spec) {
  const fedanon::v1::NumericSplit mode = spec.numeric_split();
  if (mode != fedanon::v1::NUMERIC_SPLIT_UNSPECIFIED && mode != fedanon::v1::NUMERIC_SPLIT_BINNED &&
      mode != fedanon::v1::NUMERIC_SPLIT_EXACT) {
    return absl::InvalidArgumentError(base::Cat("numeric_split has the unknown value ", mode));
  }
  if (mode == fedanon::v1::NUMERIC_SPLIT_EXACT &&
      (spec.numeric_cells() != 0 || spec.min_split_bin() != 0)) {
    return absl::InvalidArgumentError(
        "numeric_cells and min_split_bin apply to numeric_split: binned only");
  }
  if (mode == fedanon::v1::NUMERIC_SPLIT_BINNED && spec.has_sequential()) {
    return absl::InvalidArgumentError(
        "numeric_split: binned does not apply to sequential releases (a single data holder; "
        "thresholds are searched per value)");
  }
  if (spec.numeric_cells() > kMaxNumericCells) {
    return absl::InvalidArgumentError(base::Cat("numeric_cells = ", spec.numeric_cells(),
                                                " exceeds the limit of ", kMaxNumericCells));
  }
  return absl::OkStatus();
}

// recoding: local runs on one data holder only (docs/engine.md, "Local recoding").
absl::Status ValidateRecoding(const JobSpec& spec) {
  const fedanon::v1::Recoding recoding = spec.recoding();
  if (recoding != fedanon::v1::RECODING_UNSPECIFIED && recoding != fedanon::v1::RECODING_GLOBAL &&
      recoding != fedanon::v1::RECODING_LOCAL) {
    return absl::InvalidArgumentError(base::Cat("recoding has the unknown value ", recoding));
  }
  if (recoding == fedanon::v1::RECODING_LOCAL && spec.has_sequential()) {
    return absl::InvalidArgumentError(
        "recoding: local does not apply to sequential releases (their join is checked against "
        "one global cut)");
  }
  return absl::OkStatus();
}

// The `risk` section (docs/risk.md): at most one population input, a threshold in [0, 1].
absl::Status ValidateRiskOptions(const JobSpec& spec) {
  const fedanon::v1::RiskOptions& risk = spec.risk();
  if (risk.population_size() > 0 && risk.sampling_fraction() != 0) {
    return absl::InvalidArgumentError("risk: give population_size or sampling_fraction, not both");
  }
  if (risk.sampling_fraction() != 0 &&
      !(risk.sampling_fraction() > 0 && risk.sampling_fraction() <= 1)) {
    return absl::InvalidArgumentError(
        base::Cat("risk.sampling_fraction must lie in (0, 1], got ", risk.sampling_fraction()));
  }
  if (!(risk.threshold() >= 0 && risk.threshold() <= 1)) {
    return absl::InvalidArgumentError(
        base::Cat("risk.threshold is a probability in (0, 1], got ", risk.threshold()));
  }
  return absl::OkStatus();
}

// The `hierarchy` section's structure (docs/hierarchies.md): each definition names a QID with a
// taxonomy path, once, and one kind; the kinds' parameters are checked where the hierarchies are
// built (common/hierarchies).
absl::Status ValidateHierarchySection(const JobSpec& spec, const Attributes& index) {
  absl::flat_hash_set<std::string> defined;
  for (const fedanon::v1::HierarchyDefinition& h : spec.hierarchy()) {
    auto it = index.by_name.find(h.attribute());
    if (it == index.by_name.end() || it->second->role() != fedanon::v1::ROLE_QID) {
      return absl::InvalidArgumentError(
          base::Cat("hierarchy: '", h.attribute(), "' is not a QID attribute of the spec"));
    }
    if (it->second->taxonomy().empty()) {
      return absl::InvalidArgumentError(
          base::Cat("hierarchy: attribute '", h.attribute(),
                    "' has no taxonomy path to write the hierarchy to (taxonomy: FILE.csv)"));
    }
    if (h.kind_case() == fedanon::v1::HierarchyDefinition::KIND_NOT_SET) {
      return absl::InvalidArgumentError(base::Cat(
          "hierarchy for '", h.attribute(), "': give one of interval, masking, date or ordered"));
    }
    if (!defined.insert(h.attribute()).second) {
      return absl::InvalidArgumentError(
          base::Cat("hierarchy: attribute '", h.attribute(), "' is defined twice"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateJobSpec(const JobSpec& spec) {
  ASSIGN_OR_RETURN(const Attributes index, IndexAttributes(spec));
  RETURN_IF_ERROR(ValidateRiskOptions(spec));
  RETURN_IF_ERROR(ValidateHierarchySection(spec, index));
  RETURN_IF_ERROR(ValidateScore(spec, index));
  RETURN_IF_ERROR(ValidateParticipation(spec));
  RETURN_IF_ERROR(ValidateNumericSplit(spec));
  RETURN_IF_ERROR(ValidateRecoding(spec));
  if (std::optional<SpecIssue> issue = DistributionModelIssue(spec)) {
    return absl::InvalidArgumentError(issue->message);
  }
  if (spec.has_sequential()) return ValidateSequentialSpec(spec);
  const Privacy& privacy = spec.privacy();
  switch (privacy.model()) {
    case fedanon::v1::PRIVACY_MODEL_UNSPECIFIED:
    case fedanon::v1::PRIVACY_MODEL_LKC:
      return ValidateLkc(privacy, index);
    case fedanon::v1::PRIVACY_MODEL_TEMPLATES:
      return ValidateTemplates(privacy, index);
    case fedanon::v1::PRIVACY_MODEL_LDIVERSITY:
    case fedanon::v1::PRIVACY_MODEL_TCLOSENESS:
      return absl::OkStatus();  // DistributionModelIssue above
    default:
      return absl::InvalidArgumentError(
          base::Cat("privacy.model has the unknown value ", privacy.model()));
  }
}

uint64_t MaxRecordsPerParty(const JobSpec& spec) {
  return spec.max_records_per_party() == 0 ? kDefaultMaxRecordsPerParty
                                           : spec.max_records_per_party();
}

std::vector<std::string> VerticalLocalJudges(const JobSpec& spec) {
  std::vector<std::string> judges;
  if (spec.recoding() != fedanon::v1::RECODING_LOCAL ||
      spec.partitioning() != fedanon::v1::PARTITIONING_VERTICAL) {
    return judges;
  }
  const auto& privacy = spec.privacy();
  std::string single_sensitive;
  std::map<std::string, std::string> party_of;
  for (const auto& a : spec.attributes()) {
    party_of[a.name()] = a.party();
    if (a.role() == fedanon::v1::ROLE_SENSITIVE) single_sensitive = a.name();
  }
  auto add = [&](const std::string& attribute) {
    const std::string& party = party_of[attribute];
    if (!party.empty() && std::find(judges.begin(), judges.end(), party) == judges.end()) {
      judges.push_back(party);
    }
  };
  const std::string lkc_attr =
      privacy.sensitive_attribute().empty() ? single_sensitive : privacy.sensitive_attribute();
  if (privacy.model() == fedanon::v1::PRIVACY_MODEL_LKC) {
    if (!privacy.sensitive_values().empty() && privacy.c() < 1.0) add(lkc_attr);
  } else {
    for (const auto& t : privacy.confidence()) {
      if (t.max() < 1.0) add(t.attribute().empty() ? lkc_attr : t.attribute());
    }
  }
  // Job order (the order of the attributes' parties in the spec) is not the ring's; sort so the
  // leader and every party list them alike.
  std::sort(judges.begin(), judges.end());
  return judges;
}

absl::Status CheckFederatedRecoding(const JobSpec& spec) {
  const std::vector<std::string> judges = VerticalLocalJudges(spec);
  if (judges.empty() || spec.score() != fedanon::v1::SCORE_FUNCTION_INFOGAIN_PRIVLOSS) {
    return absl::OkStatus();
  }
  // Without an anonymity threshold the local rule's PrivLoss is the rise of the confidence
  // (thesis Eq. 5.1) over every bounded sensitive value, for a split on any QID attribute: the
  // proposer of a split needs every bounded sensitive value. Only one party holding every QID
  // attribute and every bounded sensitive attribute can score alone.
  const auto& p = spec.privacy();
  bool has_anonymity = p.model() == fedanon::v1::PRIVACY_MODEL_LKC && p.k() > 1;
  for (const auto& t : p.templates()) has_anonymity = has_anonymity || t.k() > 1;
  if (has_anonymity) return absl::OkStatus();
  bool alone = judges.size() == 1;
  for (const auto& a : spec.attributes()) {
    if (a.role() == fedanon::v1::ROLE_QID && a.party() != judges[0]) alone = false;
  }
  if (alone) return absl::OkStatus();
  return absl::InvalidArgumentError(kLocalPrivLossNeedsSensitive);
}

std::string JobSpecToYaml(const JobSpec& spec) {
  YAML::Emitter out;
  EmitMessage(out, spec, /*flow=*/false);
  std::string text = out.c_str();
  if (text.empty() || text.back() != '\n') text.push_back('\n');
  return text;
}

}  // namespace fedanon::spec
