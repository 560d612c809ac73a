// Brute-force checker for sequential releases (tests only). It shares no code with the engine:
// it parses taxonomies itself, materializes the join of two string tables with its own
// consistency predicate (thesis §6.1.3: equal, or one value an ancestor of the other in the
// attribute's taxonomy; equal strings where there is no taxonomy), and evaluates privacy
// templates on the joined records directly (Def. 4.1.1 distinct Y values per X value; Def. 5.1.1
// confidence a(x, y) / a(x)). Quadratic in the table sizes: for small tables. StarJoin does the
// same for several previous releases (the star join of thesis §6.5), materializing every tuple.
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

// Several previous releases (thesis §6.5): the star join of T1 with T2, ..., Tp. A match is a
// tuple (t1, t2, ..., tp) where t1 matches every ti on the attributes T1 and Ti have in common
// (the previous releases are not compared with each other), and no rule forbids (t1, ti) for a
// rule whose `previous` column Ti has (`release` 0: every such Ti; i >= 1: only Ti). Rows of the
// result: the row number in T1, then in each previous release.
struct StarRule {
  Rule rule;
  int release = 0;
};

inline bool PairMatches(const Release& t1, size_t i, const Release& t2, size_t j,
                        const Taxonomies& tax, const std::vector<StarRule>& rules, int release) {
  for (size_t c = 0; c < t1.header.size(); ++c) {
    const int c2 = t2.Column(t1.header[c]);
    if (c2 < 0) continue;
    const std::string& a = t1.rows[i][c];
    const std::string& b = t2.rows[j][c2];
    auto it = tax.find(t1.header[c]);
    const bool match =
        it == tax.end() ? a == b
                        : IsAncestorOrSelf(it->second, a, b) || IsAncestorOrSelf(it->second, b, a);
    if (!match) return false;
  }
  for (const StarRule& sr : rules) {
    const Rule& r = sr.rule;
    if (sr.release != 0 && sr.release != release) continue;
    if (t2.Column(r.previous) < 0) continue;
    if (AtOrBelow(tax, r.current, r.current_value, t1.rows[i][t1.Column(r.current)]) &&
        AtOrBelow(tax, r.previous, r.previous_value, t2.rows[j][t2.Column(r.previous)])) {
      return false;
    }
  }
  return true;
}

inline std::vector<std::vector<size_t>> StarJoin(const Release& t1,
                                                 const std::vector<Release>& previous,
                                                 const Taxonomies& tax,
                                                 const std::vector<StarRule>& rules = {}) {
  std::vector<std::vector<size_t>> out;
  for (size_t i = 0; i < t1.rows.size(); ++i) {
    std::vector<std::vector<size_t>> match(previous.size());
    bool any = true;
    for (size_t p = 0; p < previous.size(); ++p) {
      for (size_t j = 0; j < previous[p].rows.size(); ++j) {
        if (PairMatches(t1, i, previous[p], j, tax, rules, static_cast<int>(p + 1))) {
          match[p].push_back(j);
        }
      }
      any &= !match[p].empty();
    }
    if (!any) continue;
    std::vector<size_t> at(previous.size(), 0);
    while (true) {
      std::vector<size_t> row = {i};
      for (size_t p = 0; p < previous.size(); ++p) row.push_back(match[p][at[p]]);
      out.push_back(std::move(row));
      size_t p = previous.size();
      while (p > 0 && ++at[p - 1] == match[p - 1].size()) at[--p] = 0;
      if (p == 0) break;
    }
  }
  return out;
}

// "current.NAME", "previousI.NAME" (release I), "previous.NAME" (release 1); "@record": the row.
struct StarRef {
  int release = 0;  // 0: T1
  std::string name;
};
inline StarRef ParseStarRef(const std::string& text) {
  StarRef r;
  const size_t dot = text.find('.');
  const std::string side = text.substr(0, dot);
  r.name = text.substr(dot + 1);
  if (side == "current") return r;
  r.release = side == "previous" ? 1 : std::stoi(side.substr(8));
  return r;
}

inline std::string StarTuple(const Release& t1, const std::vector<Release>& previous,
                             const std::vector<size_t>& m, const std::vector<StarRef>& refs) {
  std::string s;
  for (const StarRef& r : refs) {
    const Release& t = r.release == 0 ? t1 : previous[r.release - 1];
    const size_t row = m[r.release];
    s += r.name == "@record" ? "#" + std::to_string(row) : t.rows[row][t.Column(r.name)];
    s += '\x1f';
  }
  return s;
}

// min over x of the number of distinct Y values joined with x (0 for an empty join).
inline uint64_t StarAnonymity(const Release& t1, const std::vector<Release>& previous,
                              const std::vector<std::vector<size_t>>& join,
                              const std::vector<StarRef>& x, const std::vector<StarRef>& y) {
  std::map<std::string, std::set<std::string>> ys;
  for (const auto& m : join) {
    ys[StarTuple(t1, previous, m, x)].insert(StarTuple(t1, previous, m, y));
  }
  uint64_t best = 0;
  bool first = true;
  for (const auto& [k, s] : ys) {
    best = first ? s.size() : std::min<uint64_t>(best, s.size());
    first = false;
  }
  return best;
}

// max over x and the sensitive values of a(x, y) / a(x).
inline double StarConfidence(const Release& t1, const std::vector<Release>& previous,
                             const std::vector<std::vector<size_t>>& join,
                             const std::vector<StarRef>& x, const StarRef& y,
                             const std::vector<std::string>& values) {
  std::map<std::string, std::pair<uint64_t, std::map<std::string, uint64_t>>> counts;
  for (const auto& m : join) {
    auto& c = counts[StarTuple(t1, previous, m, x)];
    ++c.first;
    ++c.second[StarTuple(t1, previous, m, {y})];
  }
  double best = 0;
  for (const auto& [k, c] : counts) {
    for (const std::string& v : values) {
      auto it = c.second.find(v + '\x1f');
      if (it != c.second.end()) {
        best = std::max(best, static_cast<double>(it->second) / static_cast<double>(c.first));
      }
    }
  }
  return best;
}

}  // namespace fedanon::testing::seqcheck
