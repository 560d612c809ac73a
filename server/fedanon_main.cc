// fedanon: the local tool — centralized anonymization, synthetic data generation.
#include "common/tool.h"

int main(int argc, char** argv) { return fedanon::common::RunTool(argc, argv); }
