// IR debug: every IR node records where the user's code made it (the
// Python file and line, or the C++ caller's std::source_location), and
// graph dumps and collective errors show it:
//
//   ordo::set_ir_debug_enabled(true);  // or ORDO_IR_DEBUG=1 in the environment
//   ordo::Tensor y = ordo::softmax(x * 2.0, -1);  // every node of it: this line
//   ordo::Tensor s = ordo::all_reduce(ordo::ReduceType::kSum, x);  // recorded at this line
//
// Every op takes its caller's line through a defaulted last parameter
// (ordo::Caller, ordo/tensor.h); a function of yours that wraps ops can take
// one too and pass it on, so that its callers' lines are recorded.
//   // a peer that runs another line's collective here: CollectiveMismatchError
//   // "... device 0 runs all_reduce(sum, scale 1) of float32[4] at train.cc:12 but ..."
//
// With it on, the location is part of a node's hash (a plan compiled for one
// line is not run for another) and of a collective's fingerprint (a device
// that reaches a collective from another line than its peers is a
// mismatch, even when the ops are alike). With it off nothing is recorded.
#pragma once

namespace ordo {

// As ORDO_IR_DEBUG says (1, on or true; off by default) until set here.
// Nodes made before a change keep what they recorded.
void set_ir_debug_enabled(bool enabled);
bool ir_debug_enabled();

}  // namespace ordo
