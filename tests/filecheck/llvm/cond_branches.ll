; ModuleID = "golden"
target triple = "x86_64-unknown-linux-gnu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

define internal void @"golden_k0_cond_true_k0_neg"(ptr noalias %".1", ptr noalias %".2", ptr noalias %".3") noinline nounwind "prefer-vector-width"="512"
{
entry:
  br label %"i.head"
i.head:
  %"i" = phi  i64 [0, %"entry"], [%"i.next", %"i.body"]
  %".6" = icmp slt i64 %"i", 4
  br i1 %".6", label %"i.body", label %"i.exit"
i.body:
  %".8" = getelementptr inbounds float, ptr %".1", i64 %"i"
  %".9" = load float, ptr %".8", align 4
  %".10" = fneg float %".9"
  %".11" = getelementptr inbounds float, ptr %".2", i64 %"i"
  store float %".10", ptr %".11", align 4
  %"i.next" = add nuw nsw i64 %"i", 1
  br label %"i.head"
i.exit:
  ret void
}

define internal void @"golden_k1_exp"(ptr noalias %".1", ptr noalias %".2", ptr noalias %".3") noinline nounwind optsize "prefer-vector-width"="512" "tensorplay-cheap"
{
entry:
  br label %"i.head"
i.head:
  %"i" = phi  i64 [0, %"entry"], [%"i.next", %"i.body"]
  %".6" = icmp slt i64 %"i", 4
  br i1 %".6", label %"i.body", label %"i.exit"
i.body:
  %".8" = getelementptr inbounds float, ptr %".1", i64 %"i"
  %".9" = load float, ptr %".8", align 4
  %".10" = call float @"llvm.maxnum.f32"(float %".9", float 0xc05a000000000000)
  %".11" = call float @"llvm.minnum.f32"(float %".10", float 0x4056400000000000)
  %".12" = fmul float %".11", 0x3ff7154760000000
  %".13" = call float @"llvm.roundeven.f32"(float %".12")
  %".14" = fneg float %".13"
  %".15" = call float @"llvm.fma.f32"(float %".14", float 0x3fe62e4000000000, float %".11")
  %".16" = fneg float %".13"
  %".17" = call float @"llvm.fma.f32"(float %".16", float 0x3eb7f7d1c0000000, float %".15")
  %".18" = fmul float %".17", %".17"
  %".19" = call float @"llvm.fma.f32"(float 0x3f56d13e20000000, float %".17", float 0x3f8120e480000000)
  %".20" = call float @"llvm.fma.f32"(float %".19", float %".17", float 0x3fa5555180000000)
  %".21" = call float @"llvm.fma.f32"(float %".20", float %".17", float 0x3fc5554da0000000)
  %".22" = call float @"llvm.fma.f32"(float %".21", float %".17", float 0x3fe0000000000000)
  %".23" = call float @"llvm.fma.f32"(float %".18", float %".22", float %".17")
  %".24" = fadd float 0x3ff0000000000000, %".23"
  %".25" = fptosi float %".13" to i32
  %".26" = ashr i32 %".25", 1
  %".27" = sub i32 %".25", %".26"
  %".28" = add i32 %".26", 127
  %".29" = shl i32 %".28", 23
  %".30" = bitcast i32 %".29" to float
  %".31" = fmul float %".24", %".30"
  %".32" = add i32 %".27", 127
  %".33" = shl i32 %".32", 23
  %".34" = bitcast i32 %".33" to float
  %".35" = fmul float %".31", %".34"
  %".36" = fcmp uno float %".9", %".9"
  %".37" = select  i1 %".36", float %".9", float %".35"
  %".38" = getelementptr inbounds float, ptr %".2", i64 %"i"
  store float %".37", ptr %".38", align 4
  %"i.next" = add nuw nsw i64 %"i", 1
  br label %"i.head"
i.exit:
  ret void
}

declare float @"llvm.maxnum.f32"(float %".1", float %".2")

declare float @"llvm.minnum.f32"(float %".1", float %".2")

declare float @"llvm.roundeven.f32"(float %".1")

declare float @"llvm.fma.f32"(float %".1", float %".2", float %".3")

define i64 @"golden_entry"(ptr %".1", ptr %".2", ptr %".3", ptr %".4") nounwind "prefer-vector-width"="512"
{
entry:
  %"status" = alloca i64
  store i64 0, i64* %"status"
  %".7" = getelementptr inbounds i8, ptr %".4", i64 16
  %".8" = load ptr, ptr %".7"
  %".9" = getelementptr inbounds i8, ptr %".1", i64 16
  %".10" = load ptr, ptr %".9"
  %".11" = getelementptr inbounds i8, ptr %".2", i64 16
  %".12" = load ptr, ptr %".11"
  %".13" = getelementptr inbounds i8, ptr %".8", i64 0
  %".14" = getelementptr inbounds i8, ptr %".8", i64 64
  %".15" = load i8, ptr %".10"
  %".16" = icmp ne i8 %".15", 0
  br i1 %".16", label %"entry.if", label %"entry.else"
entry.if:
  %".18" = getelementptr inbounds i8, ptr %".14", i64 0
  call void @"golden_k0_cond_true_k0_neg"(ptr %".12", ptr %".13", i64* %"status")
  br label %"entry.endif"
entry.else:
  %".21" = getelementptr inbounds i8, ptr %".14", i64 0
  call void @"llvm.memcpy.p0.p0.i64"(ptr %".13", ptr %".12", i64 16, i1 0)
  br label %"entry.endif"
entry.endif:
  %".24" = getelementptr inbounds i8, ptr %".3", i64 16
  %".25" = load ptr, ptr %".24"
  call void @"golden_k1_exp"(ptr %".13", ptr %".25", i64* %"status")
  %".27" = load i64, i64* %"status"
  ret i64 %".27"
}

declare void @"llvm.memcpy.p0.p0.i64"(ptr %".1", ptr %".2", i64 %".3", i1 %".4")
