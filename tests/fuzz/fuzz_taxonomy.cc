// Fuzz target: the ARX hierarchy reader (common/table/taxonomy.h) over arbitrary text, then the
// public schema of a job whose QID uses it (common/table/dataset.h). A taxonomy that loads must
// be a well-formed tree, checked here from its accessors alone: the root is node 0 and every other
// node's parent was created before it, lists it as a child and is one level up; labels are unique
// and found again; leaves are exactly the childless nodes; ChildToward and Generalizes agree with
// the parent links.
#include <string>
#include <string_view>
#include <vector>

#include "common/table/dataset.h"
#include "common/table/taxonomy.h"
#include "fedanon/v1/job.pb.h"
#include "tests/fuzz/fuzz_support.h"

namespace fedanon::fuzz {
namespace {

using table::Taxonomy;
using NodeId = Taxonomy::NodeId;

void CheckTree(const Taxonomy& t) {
  if (t.size() == 0) FuzzFail("a taxonomy without a root");
  if (t.root() != 0 || t.parent(0) != Taxonomy::kNoNode || t.depth(0) != 0) FuzzFail("root");
  size_t child_links = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const auto n = static_cast<NodeId>(i);
    if (t.Find(t.label(n)) != n) FuzzFail("Find(label(n)) is not n");
    if (t.label(n).empty()) FuzzFail("an empty label");
    const std::optional<NodeId> leaf = t.FindLeaf(t.label(n));
    if (leaf.has_value() != t.is_leaf(n) || (leaf.has_value() && *leaf != n)) {
      FuzzFail("FindLeaf disagrees with is_leaf");
    }
    if (!t.Generalizes(0, n) || !t.Generalizes(n, n)) FuzzFail("Generalizes(root or self, n)");
    if (t.ChildToward(n, n) != Taxonomy::kNoNode) FuzzFail("ChildToward(n, n)");
    for (NodeId c : t.children(n)) {
      if (c <= 0 || static_cast<size_t>(c) >= t.size() || t.parent(c) != n) {
        FuzzFail("a child whose parent is someone else");
      }
      ++child_links;
    }
    if (n == 0) continue;
    const NodeId p = t.parent(n);
    if (p < 0 || p >= n) FuzzFail("a parent created after its child");
    if (t.depth(n) != t.depth(p) + 1) FuzzFail("depth is not the parent's plus one");
    if (t.ChildToward(p, n) != n) FuzzFail("ChildToward(parent, n) is not n");
    if (t.ChildToward(0, n) == Taxonomy::kNoNode || t.parent(t.ChildToward(0, n)) != 0) {
      FuzzFail("ChildToward(root, n) is not a child of the root");
    }
    if (t.Generalizes(n, p)) FuzzFail("a node generalizes its parent");
  }
  if (child_links != t.size() - 1) FuzzFail("not every node but the root is someone's child");
}

void FuzzTaxonomy(std::string_view text) {
  absl::StatusOr<Taxonomy> parsed = Taxonomy::ParseArx(text, "fuzz.csv", "attr");
  if (parsed.ok()) {
    CheckTree(*parsed);
    // `missing: keep` adds a leaf under the root when the taxonomy lacks the token.
    const std::string token = "\x01missing";
    const bool existed = parsed->Find(token).has_value();
    absl::StatusOr<NodeId> added = parsed->AddLeafUnderRoot(token);
    if (added.ok() == existed) FuzzFail("AddLeafUnderRoot succeeded exactly when it should not");
    if (added.ok()) {
      if (parsed->parent(*added) != 0 || parsed->FindLeaf(token) != *added) {
        FuzzFail("the added leaf is not a leaf under the root");
      }
      CheckTree(*parsed);
    }
  }
  // The same text as the taxonomy of a federated job's QID: BuildPublicSchema parses it again and
  // must agree on whether it loads.
  fedanon::v1::JobSpec spec;
  auto* qid = spec.add_attributes();
  qid->set_name("attr");
  qid->set_role(fedanon::v1::ROLE_QID);
  qid->set_taxonomy("attr.csv");
  auto* cls = spec.add_attributes();
  cls->set_name("class");
  cls->set_role(fedanon::v1::ROLE_CLASS);
  cls->add_values("yes");
  cls->add_values("no");
  spec.set_missing_token("?");
  spec.set_suppression_token("*");
  spec.mutable_privacy()->set_model(fedanon::v1::PRIVACY_MODEL_LKC);
  spec.mutable_privacy()->set_l(1);
  spec.mutable_privacy()->set_k(1);
  const absl::StatusOr<table::Dataset> schema =
      table::BuildPublicSchema(spec, {{"attr", std::string(text)}});
  if (schema.ok() && !parsed.ok()) FuzzFail("a schema from a taxonomy that does not parse");
  if (schema.ok() && (schema->qids.size() != 1 || schema->qids[0].taxonomy == nullptr)) {
    FuzzFail("the schema lacks the taxonomy");
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> FuzzSeeds() { return {}; }

}  // namespace fedanon::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fedanon::fuzz::FuzzTaxonomy(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
