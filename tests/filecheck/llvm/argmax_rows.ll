; ModuleID = "golden"
target triple = "x86_64-unknown-linux-gnu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

define internal void @"golden_k0_argmax"(ptr noalias %".1", ptr noalias %".2", ptr noalias %".3") noinline nounwind "prefer-vector-width"="512" "tensorplay-cheap"
{
entry:
  %"pos" = alloca i64
  %"best" = alloca double
  br label %"o0.head"
o0.head:
  %"o0" = phi  i64 [0, %"entry"], [%"o0.next", %"s.exit"]
  %".6" = icmp slt i64 %"o0", 6
  br i1 %".6", label %"o0.body", label %"o0.exit"
o0.body:
  store double 0xfff0000000000000, double* %"best"
  br label %"r.head"
o0.exit:
  ret void
r.head:
  %"r" = phi  i64 [0, %"o0.body"], [%"r.next", %"r.body"]
  %".10" = icmp slt i64 %"r", 7
  br i1 %".10", label %"r.body", label %"r.exit"
r.body:
  %".12" = load double, double* %"best"
  %".13" = mul nuw nsw i64 %"o0", 7
  %".14" = add i64 %".13", %"r"
  %".15" = getelementptr inbounds double, ptr %".1", i64 %".14"
  %".16" = load double, ptr %".15", align 8
  %".17" = call double @"llvm.maximum.f64"(double %".12", double %".16")
  store double %".17", double* %"best"
  %"r.next" = add nuw nsw i64 %"r", 1
  br label %"r.head"
r.exit:
  %".20" = load double, double* %"best"
  store i64 7, i64* %"pos"
  br label %"s.head"
s.head:
  %"s" = phi  i64 [0, %"r.exit"], [%"s.next", %"s.body"]
  %".23" = icmp slt i64 %"s", 7
  br i1 %".23", label %"s.body", label %"s.exit"
s.body:
  %".25" = mul nuw nsw i64 %"o0", 7
  %".26" = add i64 %".25", %"s"
  %".27" = getelementptr inbounds double, ptr %".1", i64 %".26"
  %".28" = load double, ptr %".27", align 8
  %".29" = fcmp oeq double %".28", %".20"
  %".30" = fcmp uno double %".28", %".28"
  %".31" = fcmp uno double %".20", %".20"
  %".32" = and i1 %".30", %".31"
  %".33" = or i1 %".29", %".32"
  %".34" = select  i1 %".33", i64 %"s", i64 7
  %".35" = load i64, i64* %"pos"
  %".36" = call i64 @"llvm.smin.i64"(i64 %".35", i64 %".34")
  store i64 %".36", i64* %"pos"
  %"s.next" = add nuw nsw i64 %"s", 1
  br label %"s.head"
s.exit:
  %".39" = load i64, i64* %"pos"
  %".40" = getelementptr inbounds i64, ptr %".2", i64 %"o0"
  store i64 %".39", ptr %".40", align 8
  %"o0.next" = add nuw nsw i64 %"o0", 1
  br label %"o0.head"
}

declare double @"llvm.maximum.f64"(double %".1", double %".2")

declare i64 @"llvm.smin.i64"(i64 %".1", i64 %".2")

define i64 @"golden_entry"(ptr %".1", ptr %".2") nounwind "prefer-vector-width"="512"
{
entry:
  %"status" = alloca i64
  store i64 0, i64* %"status"
  %".5" = getelementptr inbounds i8, ptr %".1", i64 16
  %".6" = load ptr, ptr %".5"
  %".7" = getelementptr inbounds i8, ptr %".2", i64 16
  %".8" = load ptr, ptr %".7"
  call void @"golden_k0_argmax"(ptr %".6", ptr %".8", i64* %"status")
  %".10" = load i64, i64* %"status"
  ret i64 %".10"
}
