; ModuleID = "golden"
target triple = "x86_64-unknown-linux-gnu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

define internal void @"golden_k0_scan_body_k0_add"(ptr noalias %".1", ptr noalias %".2", ptr noalias %".3", ptr noalias %".4", ptr noalias %".5") noinline nounwind "prefer-vector-width"="512"
{
entry:
  br label %"i.head"
i.head:
  %"i" = phi  i64 [0, %"entry"], [%"i.next", %"i.body"]
  %".8" = icmp slt i64 %"i", 8
  br i1 %".8", label %"i.body", label %"i.exit"
i.body:
  %".10" = getelementptr inbounds float, ptr %".1", i64 %"i"
  %".11" = load float, ptr %".10", align 4
  %".12" = getelementptr inbounds float, ptr %".2", i64 %"i"
  %".13" = load float, ptr %".12", align 4
  %".14" = fmul float %".11", %".13"
  %".15" = getelementptr inbounds float, ptr %".3", i64 %"i"
  %".16" = load float, ptr %".15", align 4
  %".17" = fadd float %".14", %".16"
  %".18" = getelementptr inbounds float, ptr %".4", i64 %"i"
  store float %".17", ptr %".18", align 4
  %"i.next" = add nuw nsw i64 %"i", 1
  br label %"i.head"
i.exit:
  ret void
}

define internal void @"golden_k0_scan_body_k1_mul"(ptr noalias %".1", ptr noalias %".2", ptr noalias %".3", ptr noalias %".4") noinline nounwind "prefer-vector-width"="512"
{
entry:
  br label %"i.head"
i.head:
  %"i" = phi  i64 [0, %"entry"], [%"i.next", %"i.body"]
  %".7" = icmp slt i64 %"i", 8
  br i1 %".7", label %"i.body", label %"i.exit"
i.body:
  %".9" = getelementptr inbounds float, ptr %".1", i64 %"i"
  %".10" = load float, ptr %".9", align 4
  %".11" = getelementptr inbounds float, ptr %".2", i64 %"i"
  %".12" = load float, ptr %".11", align 4
  %".13" = fmul float %".10", %".12"
  %".14" = getelementptr inbounds float, ptr %".3", i64 %"i"
  store float %".13", ptr %".14", align 4
  %"i.next" = add nuw nsw i64 %"i", 1
  br label %"i.head"
i.exit:
  ret void
}

define i64 @"golden_entry"(ptr %".1", ptr %".2", ptr %".3", ptr %".4", ptr %".5", ptr %".6") nounwind "prefer-vector-width"="512"
{
entry:
  %"status" = alloca i64
  store i64 0, i64* %"status"
  %".9" = getelementptr inbounds i8, ptr %".6", i64 16
  %".10" = load ptr, ptr %".9"
  %".11" = getelementptr inbounds i8, ptr %".1", i64 16
  %".12" = load ptr, ptr %".11"
  %".13" = getelementptr inbounds i8, ptr %".2", i64 16
  %".14" = load ptr, ptr %".13"
  %".15" = getelementptr inbounds i8, ptr %".3", i64 16
  %".16" = load ptr, ptr %".15"
  %".17" = getelementptr inbounds i8, ptr %".4", i64 16
  %".18" = load ptr, ptr %".17"
  %".19" = getelementptr inbounds i8, ptr %".5", i64 16
  %".20" = load ptr, ptr %".19"
  %".21" = getelementptr inbounds i8, ptr %".10", i64 0
  %".22" = getelementptr inbounds i8, ptr %".21", i64 0
  br label %"scan.head"
scan.head:
  %"scan" = phi  i64 [0, %"entry"], [%"scan.next", %"loop.stay"]
  %".24" = icmp slt i64 %"scan", 6
  br i1 %".24", label %"scan.body", label %"scan.exit"
scan.body:
  %".26" = sub i64 5, %"scan"
  %".27" = mul i64 %".26", 32
  %".28" = getelementptr inbounds i8, ptr %".16", i64 %".27"
  %".29" = mul i64 %".26", 32
  %".30" = getelementptr inbounds i8, ptr %".20", i64 %".29"
  %".31" = trunc i64 %"scan" to i1
  %".32" = icmp eq i64 %"scan", 0
  %".33" = select  i1 %".31", ptr %".22", ptr %".18"
  %".34" = select  i1 %".32", ptr %".14", ptr %".33"
  %".35" = trunc i64 %"scan" to i1
  %".36" = select  i1 %".35", ptr %".18", ptr %".22"
  %".37" = getelementptr inbounds i8, ptr %".21", i64 64
  call void @"golden_k0_scan_body_k0_add"(ptr %".12", ptr %".34", ptr %".28", ptr %".36", i64* %"status")
  call void @"golden_k0_scan_body_k1_mul"(ptr %".34", ptr %".28", ptr %".30", i64* %"status")
  %".40" = load i64, i64* %"status"
  %".41" = icmp ne i64 %".40", 0
  br i1 %".41", label %"scan.exit", label %"loop.stay"
scan.exit:
  %".44" = load i64, i64* %"status"
  ret i64 %".44"
loop.stay:
  %"scan.next" = add nuw nsw i64 %"scan", 1
  br label %"scan.head"
}
