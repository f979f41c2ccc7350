; ModuleID = "golden"
target triple = "x86_64-unknown-linux-gnu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

define internal void @"golden_k0_rev"(ptr noalias %".1", ptr noalias %".2", ptr noalias %".3", ptr noalias %".4") noinline nounwind optsize "prefer-vector-width"="512" "tensorplay-cheap"
{
entry:
  br label %"d0.head"
d0.head:
  %"d0" = phi  i64 [0, %"entry"], [%"d0.next", %"d1.exit"]
  %".7" = icmp slt i64 %"d0", 5
  br i1 %".7", label %"d0.body", label %"d0.exit"
d0.body:
  br label %"d1.head"
d0.exit:
  ret void
d1.head:
  %"d1" = phi  i64 [0, %"d0.body"], [%"d1.next", %"d1.body"]
  %".10" = icmp slt i64 %"d1", 3
  br i1 %".10", label %"d1.body", label %"d1.exit"
d1.body:
  %".12" = sub i64 4, %"d0"
  %".13" = mul nuw nsw i64 %"d1", 5
  %".14" = add i64 %".13", %".12"
  %".15" = getelementptr inbounds i32, ptr %".1", i64 %".14"
  %".16" = load i32, ptr %".15", align 4
  %".17" = mul nuw nsw i64 %".12", 3
  %".18" = add i64 %".17", %"d1"
  %".19" = getelementptr inbounds i32, ptr %".2", i64 %".18"
  %".20" = load i32, ptr %".19", align 4
  %".21" = icmp sgt i32 %".16", %".20"
  %".22" = select  i1 %".21", i32 %".16", i32 %".20"
  %".23" = mul nuw nsw i64 %"d0", 3
  %".24" = add i64 %".23", %"d1"
  %".25" = getelementptr inbounds i32, ptr %".3", i64 %".24"
  store i32 %".22", ptr %".25", align 4
  %"d1.next" = add nuw nsw i64 %"d1", 1
  br label %"d1.head"
d1.exit:
  %"d0.next" = add nuw nsw i64 %"d0", 1
  br label %"d0.head", !llvm.loop !1
}

define i64 @"golden_entry"(ptr %".1", ptr %".2", ptr %".3") nounwind "prefer-vector-width"="512"
{
entry:
  %"status" = alloca i64
  store i64 0, i64* %"status"
  %".6" = getelementptr inbounds i8, ptr %".1", i64 16
  %".7" = load ptr, ptr %".6"
  %".8" = getelementptr inbounds i8, ptr %".2", i64 16
  %".9" = load ptr, ptr %".8"
  %".10" = getelementptr inbounds i8, ptr %".3", i64 16
  %".11" = load ptr, ptr %".10"
  call void @"golden_k0_rev"(ptr %".7", ptr %".9", ptr %".11", i64* %"status")
  %".13" = load i64, i64* %"status"
  ret i64 %".13"
}

!0 = !{ !"llvm.loop.unroll.disable" }
!1 = distinct !{!1, !0}