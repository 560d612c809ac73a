// Brute-force checker for sequential releases (tests only). It shares no code with the engine:
// it parses taxonomies itself, materializes the join of two string tables with its own
// consistency predicate (thesis §6.1.3: equal, or one value an ancestor of the other in the
// attribute's taxonomy; equal strings where there is no taxonomy), and evaluates privacy
// templates on the joined records directly (Def. 4.1.1 distinct Y values per X value; Def. 5.1.1
// confidence a(x, y) / a(x)). Quadratic in the table sizes: for small tables.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fedanon::testing::seqcheck {

struct Release {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  int Column(const std::string& name) const {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
};

// label -> parent label, from an ARX hierarchy (`leaf;parent;...;root` per line).
inline std::map<std::string, std::string> ParseParents(const std::string& arx) {
  std::map<std::string, std::string> parent;
  std::istringstream in(arx);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> labels;
    std::string cur;
    for (char c : line) {
      if (c == ';') {
        labels.push_back(cur);
        cur.clear();
      } else if (c != '\r') {
        cur.push_back(c);
      }
    }
    labels.push_back(cur);
    for (size_t i = 0; i + 1 < labels.size(); ++i) {
      if (labels[i] != labels[i + 1]) parent[labels[i]] = labels[i + 1];
    }
  }
  return parent;
}

using Taxonomies = std::map<std::string, std::map<std::string, std::string>>;

inline bool IsAncestorOrSelf(const std::map<std::string, std::string>& parent,
                             const std::string& anc, std::string v) {
  for (int guard = 0; guard < 1000; ++guard) {
    if (v == anc) return true;
    auto it = parent.find(v);
    if (it == parent.end()) return false;
    v = it->second;
  }
  return false;
}

// Inconsistency rule (§6.1.3): a T1 value of `current` at or below `current_value` never
// matches a T2 value of `previous` at or below `previous_value` (taxonomy by attribute name if
// there is one, else equality).
struct Rule {
  std::string current, current_value, previous, previous_value;
};

inline bool AtOrBelow(const Taxonomies& tax, const std::string& attribute, const std::string& top,
                      const std::string& v) {
  auto it = tax.find(attribute);
  return it == tax.end() ? v == top : IsAncestorOrSelf(it->second, top, v);
}

// All matching (t1 row, t2 row) pairs: consistent on every attribute both headers have, and no
// rule forbidding the pair.
inline std::vector<std::pair<size_t, size_t>> Join(const Release& t1, const Release& t2,
                                                   const Taxonomies& tax,
                                                   const std::vector<Rule>& rules = {}) {
  std::vector<std::pair<int, int>> common;
  std::vector<const std::map<std::string, std::string>*> parents;
  for (size_t c = 0; c < t1.header.size(); ++c) {
    const int c2 = t2.Column(t1.header[c]);
    if (c2 < 0) continue;
    common.emplace_back(static_cast<int>(c), c2);
    auto it = tax.find(t1.header[c]);
    parents.push_back(it == tax.end() ? nullptr : &it->second);
  }
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < t1.rows.size(); ++i) {
    for (size_t j = 0; j < t2.rows.size(); ++j) {
      bool match = true;
      for (size_t k = 0; k < common.size() && match; ++k) {
        const std::string& a = t1.rows[i][common[k].first];
        const std::string& b = t2.rows[j][common[k].second];
        match = parents[k] == nullptr
                    ? a == b
                    : IsAncestorOrSelf(*parents[k], a, b) || IsAncestorOrSelf(*parents[k], b, a);
      }
      for (const Rule& r : rules) {
        if (!match) break;
        match = !(AtOrBelow(tax, r.current, r.current_value, t1.rows[i][t1.Column(r.current)]) &&
                  AtOrBelow(tax, r.previous, r.previous_value, t2.rows[j][t2.Column(r.previous)]));
      }
      if (match) out.emplace_back(i, j);
    }
  }
  return out;
}

// "current.NAME" / "previous.NAME" (explicit sides only); NAME "@record" is the row number.
struct Ref {
  bool previous = false;
  std::string name;
};
inline Ref ParseRef(const std::string& text) {
  Ref r;
  if (text.rfind("previous.", 0) == 0) {
    r.previous = true;
    r.name = text.substr(9);
  } else {
    r.name = text.rfind("current.", 0) == 0 ? text.substr(8) : text;
  }
  return r;
}

inline std::string ValueOf(const Release& t1, const Release& t2, const std::pair<size_t, size_t>& m,
                           const Ref& ref) {
  const Release& t = ref.previous ? t2 : t1;
  const size_t row = ref.previous ? m.second : m.first;
  if (ref.name == "@record") return "#" + std::to_string(row);
  return t.rows[row][t.Column(ref.name)];
}

inline std::string Tuple(const Release& t1, const Release& t2, const std::pair<size_t, size_t>& m,
                         const std::vector<Ref>& refs) {
  std::string s;
  for (const Ref& r : refs) s += ValueOf(t1, t2, m, r) + '\x1f';
  return s;
}

// min over x of the number of distinct Y values joined with x (0 for an empty join).
inline uint64_t Anonymity(const Release& t1, const Release& t2,
                          const std::vector<std::pair<size_t, size_t>>& join,
                          const std::vector<Ref>& x, const std::vector<Ref>& y) {
  std::map<std::string, std::set<std::string>> ys;
  for (const auto& m : join) ys[Tuple(t1, t2, m, x)].insert(Tuple(t1, t2, m, y));
  uint64_t best = 0;
  bool first = true;
  for (const auto& [k, s] : ys) {
    best = first ? s.size() : std::min<uint64_t>(best, s.size());
    first = false;
  }
  return best;
}

// max over x and the sensitive values of a(x, y) / a(x).
inline double Confidence(const Release& t1, const Release& t2,
                         const std::vector<std::pair<size_t, size_t>>& join,
                         const std::vector<Ref>& x, const Ref& y,
                         const std::vector<std::string>& values) {
  std::map<std::string, std::pair<uint64_t, std::map<std::string, uint64_t>>> counts;
  for (const auto& m : join) {
    auto& c = counts[Tuple(t1, t2, m, x)];
    ++c.first;
    ++c.second[ValueOf(t1, t2, m, y)];
  }
  double best = 0;
  for (const auto& [k, c] : counts) {
    for (const std::string& v : values) {
      auto it = c.second.find(v);
      if (it != c.second.end()) {
        best = std::max(best, static_cast<double>(it->second) / static_cast<double>(c.first));
      }
    }
  }
  return best;
}

}  // namespace fedanon::testing::seqcheck
