; ModuleID = "golden"
target triple = "x86_64-unknown-linux-gnu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

define internal void @"golden_k0_rev"(ptr noalias %".1", ptr noalias %".2", ptr noalias %".3") nounwind "prefer-vector-width"="512"
{
entry:
  br label %"d0.head"
d0.head:
  %"d0" = phi  i64 [0, %"entry"], [%"d0.next", %"d1.exit"]
  %".6" = icmp slt i64 %"d0", 5
  br i1 %".6", label %"d0.body", label %"d0.exit"
d0.body:
  br label %"d1.head"
d0.exit:
  ret void
d1.head:
  %"d1" = phi  i64 [0, %"d0.body"], [%"d1.next", %"d1.body"]
  %".9" = icmp slt i64 %"d1", 3
  br i1 %".9", label %"d1.body", label %"d1.exit"
d1.body:
  %".11" = sub i64 4, %"d0"
  %".12" = mul nuw nsw i64 %"d1", 5
  %".13" = add i64 %".12", %".11"
  %".14" = getelementptr inbounds i32, ptr %".1", i64 %".13"
  %".15" = load i32, ptr %".14", align 4
  %".16" = mul nuw nsw i64 %".11", 3
  %".17" = add i64 %".16", %"d1"
  %".18" = getelementptr inbounds i32, ptr %".2", i64 %".17"
  %".19" = load i32, ptr %".18", align 4
  %".20" = icmp sgt i32 %".15", %".19"
  %".21" = select  i1 %".20", i32 %".15", i32 %".19"
  %".22" = mul nuw nsw i64 %"d0", 3
  %".23" = add i64 %".22", %"d1"
  %".24" = getelementptr inbounds i32, ptr %".3", i64 %".23"
  store i32 %".21", ptr %".24", align 4
  %"d1.next" = add nuw nsw i64 %"d1", 1
  br label %"d1.head"
d1.exit:
  %"d0.next" = add nuw nsw i64 %"d0", 1
  br label %"d0.head"
}

define void @"golden_entry"(ptr %".1", ptr %".2", ptr %".3") nounwind "prefer-vector-width"="512"
{
entry:
  %".5" = getelementptr inbounds i8, ptr %".1", i64 16
  %".6" = load ptr, ptr %".5"
  %".7" = getelementptr inbounds i8, ptr %".2", i64 16
  %".8" = load ptr, ptr %".7"
  %".9" = getelementptr inbounds i8, ptr %".3", i64 16
  %".10" = load ptr, ptr %".9"
  call void @"golden_k0_rev"(ptr %".6", ptr %".8", ptr %".10")
  ret void
}
