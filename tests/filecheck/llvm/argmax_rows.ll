; ModuleID = "golden"
target triple = "x86_64-unknown-linux-gnu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

define internal void @"golden_k0_argmax"(ptr noalias %".1", ptr noalias %".2") nounwind "prefer-vector-width"="512"
{
entry:
  %"pos" = alloca i64
  %"best" = alloca double
  br label %"o0.head"
o0.head:
  %"o0" = phi  i64 [0, %"entry"], [%"o0.next", %"s.exit"]
  %".5" = icmp slt i64 %"o0", 6
  br i1 %".5", label %"o0.body", label %"o0.exit"
o0.body:
  store double 0xfff0000000000000, double* %"best"
  br label %"r.head"
o0.exit:
  ret void
r.head:
  %"r" = phi  i64 [0, %"o0.body"], [%"r.next", %"r.body"]
  %".9" = icmp slt i64 %"r", 7
  br i1 %".9", label %"r.body", label %"r.exit"
r.body:
  %".11" = load double, double* %"best"
  %".12" = mul nuw nsw i64 %"o0", 7
  %".13" = add i64 %".12", %"r"
  %".14" = getelementptr inbounds double, ptr %".1", i64 %".13"
  %".15" = load double, ptr %".14", align 8
  %".16" = call double @"llvm.maximum.f64"(double %".11", double %".15")
  store double %".16", double* %"best"
  %"r.next" = add nuw nsw i64 %"r", 1
  br label %"r.head"
r.exit:
  %".19" = load double, double* %"best"
  store i64 7, i64* %"pos"
  br label %"s.head"
s.head:
  %"s" = phi  i64 [0, %"r.exit"], [%"s.next", %"s.body"]
  %".22" = icmp slt i64 %"s", 7
  br i1 %".22", label %"s.body", label %"s.exit"
s.body:
  %".24" = mul nuw nsw i64 %"o0", 7
  %".25" = add i64 %".24", %"s"
  %".26" = getelementptr inbounds double, ptr %".1", i64 %".25"
  %".27" = load double, ptr %".26", align 8
  %".28" = fcmp oeq double %".27", %".19"
  %".29" = fcmp uno double %".27", %".27"
  %".30" = fcmp uno double %".19", %".19"
  %".31" = and i1 %".29", %".30"
  %".32" = or i1 %".28", %".31"
  %".33" = select  i1 %".32", i64 %"s", i64 7
  %".34" = load i64, i64* %"pos"
  %".35" = call i64 @"llvm.smin.i64"(i64 %".34", i64 %".33")
  store i64 %".35", i64* %"pos"
  %"s.next" = add nuw nsw i64 %"s", 1
  br label %"s.head"
s.exit:
  %".38" = load i64, i64* %"pos"
  %".39" = getelementptr inbounds i64, ptr %".2", i64 %"o0"
  store i64 %".38", ptr %".39", align 8
  %"o0.next" = add nuw nsw i64 %"o0", 1
  br label %"o0.head"
}

declare double @"llvm.maximum.f64"(double %".1", double %".2")

declare i64 @"llvm.smin.i64"(i64 %".1", i64 %".2")

define void @"golden_entry"(ptr %".1", ptr %".2") nounwind "prefer-vector-width"="512"
{
entry:
  %".4" = getelementptr inbounds i8, ptr %".1", i64 16
  %".5" = load ptr, ptr %".4"
  %".6" = getelementptr inbounds i8, ptr %".2", i64 16
  %".7" = load ptr, ptr %".6"
  call void @"golden_k0_argmax"(ptr %".5", ptr %".7")
  ret void
}
