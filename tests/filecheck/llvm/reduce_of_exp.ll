; ModuleID = "golden"
target triple = "x86_64-unknown-linux-gnu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

define internal void @"golden_k0_reduce_sum"(ptr noalias %".1", ptr noalias %".2") nounwind "prefer-vector-width"="512"
{
entry:
  %"acc" = alloca double
  br label %"o0.head"
o0.head:
  %"o0" = phi  i64 [0, %"entry"], [%"o0.next", %"r0.exit"]
  %".5" = icmp slt i64 %"o0", 4
  br i1 %".5", label %"o0.body", label %"o0.exit"
o0.body:
  store double              0x0, double* %"acc"
  br label %"r0.head"
o0.exit:
  ret void
r0.head:
  %"r0" = phi  i64 [0, %"o0.body"], [%"r0.next", %"r0.body"]
  %".9" = icmp slt i64 %"r0", 8
  br i1 %".9", label %"r0.body", label %"r0.exit"
r0.body:
  %".11" = mul nuw nsw i64 %"o0", 8
  %".12" = add i64 %".11", %"r0"
  %".13" = getelementptr inbounds float, ptr %".1", i64 %".12"
  %".14" = load float, ptr %".13", align 4
  %".15" = call float @"llvm.maxnum.f32"(float %".14", float 0xc05a000000000000)
  %".16" = call float @"llvm.minnum.f32"(float %".15", float 0x4056400000000000)
  %".17" = fmul float %".16", 0x3ff7154760000000
  %".18" = call float @"llvm.roundeven.f32"(float %".17")
  %".19" = fneg float %".18"
  %".20" = call float @"llvm.fma.f32"(float %".19", float 0x3fe62e4000000000, float %".16")
  %".21" = fneg float %".18"
  %".22" = call float @"llvm.fma.f32"(float %".21", float 0x3eb7f7d1c0000000, float %".20")
  %".23" = fmul float %".22", %".22"
  %".24" = call float @"llvm.fma.f32"(float 0x3f56d13e20000000, float %".22", float 0x3f8120e480000000)
  %".25" = call float @"llvm.fma.f32"(float %".24", float %".22", float 0x3fa5555180000000)
  %".26" = call float @"llvm.fma.f32"(float %".25", float %".22", float 0x3fc5554da0000000)
  %".27" = call float @"llvm.fma.f32"(float %".26", float %".22", float 0x3fe0000000000000)
  %".28" = call float @"llvm.fma.f32"(float %".23", float %".27", float %".22")
  %".29" = fadd float 0x3ff0000000000000, %".28"
  %".30" = fptosi float %".18" to i32
  %".31" = ashr i32 %".30", 1
  %".32" = sub i32 %".30", %".31"
  %".33" = add i32 %".31", 127
  %".34" = shl i32 %".33", 23
  %".35" = bitcast i32 %".34" to float
  %".36" = fmul float %".29", %".35"
  %".37" = add i32 %".32", 127
  %".38" = shl i32 %".37", 23
  %".39" = bitcast i32 %".38" to float
  %".40" = fmul float %".36", %".39"
  %".41" = fcmp uno float %".14", %".14"
  %".42" = select  i1 %".41", float %".14", float %".40"
  %".43" = fpext float %".42" to double
  %".44" = load double, double* %"acc"
  %".45" = fadd reassoc double %".44", %".43"
  store double %".45", double* %"acc"
  %"r0.next" = add nuw nsw i64 %"r0", 1
  br label %"r0.head"
r0.exit:
  %".48" = load double, double* %"acc"
  %".49" = fptrunc double %".48" to float
  %".50" = getelementptr inbounds float, ptr %".2", i64 %"o0"
  store float %".49", ptr %".50", align 4
  %"o0.next" = add nuw nsw i64 %"o0", 1
  br label %"o0.head"
}

declare float @"llvm.maxnum.f32"(float %".1", float %".2")

declare float @"llvm.minnum.f32"(float %".1", float %".2")

declare float @"llvm.roundeven.f32"(float %".1")

declare float @"llvm.fma.f32"(float %".1", float %".2", float %".3")

define void @"golden_entry"(ptr %".1", ptr %".2") nounwind "prefer-vector-width"="512"
{
entry:
  %".4" = getelementptr inbounds i8, ptr %".1", i64 16
  %".5" = load ptr, ptr %".4"
  %".6" = getelementptr inbounds i8, ptr %".2", i64 16
  %".7" = load ptr, ptr %".6"
  call void @"golden_k0_reduce_sum"(ptr %".5", ptr %".7")
  ret void
}
