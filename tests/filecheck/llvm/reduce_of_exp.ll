; ModuleID = "golden"
target triple = "x86_64-unknown-linux-gnu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

define internal void @"golden_k0_reduce_sum"(ptr noalias %".1", ptr noalias %".2", ptr noalias %".3") noinline nounwind "prefer-vector-width"="512" "tensorplay-cheap"
{
entry:
  %"acc" = alloca double
  br label %"o0.head"
o0.head:
  %"o0" = phi  i64 [0, %"entry"], [%"o0.next", %"r0.exit"]
  %".6" = icmp slt i64 %"o0", 4
  br i1 %".6", label %"o0.body", label %"o0.exit"
o0.body:
  store double              0x0, double* %"acc"
  br label %"r0.head"
o0.exit:
  ret void
r0.head:
  %"r0" = phi  i64 [0, %"o0.body"], [%"r0.next", %"r0.body"]
  %".10" = icmp slt i64 %"r0", 8
  br i1 %".10", label %"r0.body", label %"r0.exit"
r0.body:
  %".12" = mul nuw nsw i64 %"o0", 8
  %".13" = add i64 %".12", %"r0"
  %".14" = getelementptr inbounds float, ptr %".1", i64 %".13"
  %".15" = load float, ptr %".14", align 4
  %".16" = call float @"llvm.maxnum.f32"(float %".15", float 0xc05a000000000000)
  %".17" = call float @"llvm.minnum.f32"(float %".16", float 0x4056400000000000)
  %".18" = fmul float %".17", 0x3ff7154760000000
  %".19" = call float @"llvm.roundeven.f32"(float %".18")
  %".20" = fneg float %".19"
  %".21" = call float @"llvm.fma.f32"(float %".20", float 0x3fe62e4000000000, float %".17")
  %".22" = fneg float %".19"
  %".23" = call float @"llvm.fma.f32"(float %".22", float 0x3eb7f7d1c0000000, float %".21")
  %".24" = fmul float %".23", %".23"
  %".25" = call float @"llvm.fma.f32"(float 0x3f56d13e20000000, float %".23", float 0x3f8120e480000000)
  %".26" = call float @"llvm.fma.f32"(float %".25", float %".23", float 0x3fa5555180000000)
  %".27" = call float @"llvm.fma.f32"(float %".26", float %".23", float 0x3fc5554da0000000)
  %".28" = call float @"llvm.fma.f32"(float %".27", float %".23", float 0x3fe0000000000000)
  %".29" = call float @"llvm.fma.f32"(float %".24", float %".28", float %".23")
  %".30" = fadd float 0x3ff0000000000000, %".29"
  %".31" = fptosi float %".19" to i32
  %".32" = ashr i32 %".31", 1
  %".33" = sub i32 %".31", %".32"
  %".34" = add i32 %".32", 127
  %".35" = shl i32 %".34", 23
  %".36" = bitcast i32 %".35" to float
  %".37" = fmul float %".30", %".36"
  %".38" = add i32 %".33", 127
  %".39" = shl i32 %".38", 23
  %".40" = bitcast i32 %".39" to float
  %".41" = fmul float %".37", %".40"
  %".42" = fcmp uno float %".15", %".15"
  %".43" = select  i1 %".42", float %".15", float %".41"
  %".44" = fpext float %".43" to double
  %".45" = load double, double* %"acc"
  %".46" = fadd reassoc double %".45", %".44"
  store double %".46", double* %"acc"
  %"r0.next" = add nuw nsw i64 %"r0", 1
  br label %"r0.head", !llvm.loop !1
r0.exit:
  %".49" = load double, double* %"acc"
  %".50" = fptrunc double %".49" to float
  %".51" = getelementptr inbounds float, ptr %".2", i64 %"o0"
  store float %".50", ptr %".51", align 4
  %"o0.next" = add nuw nsw i64 %"o0", 1
  br label %"o0.head"
}

declare float @"llvm.maxnum.f32"(float %".1", float %".2")

declare float @"llvm.minnum.f32"(float %".1", float %".2")

declare float @"llvm.roundeven.f32"(float %".1")

declare float @"llvm.fma.f32"(float %".1", float %".2", float %".3")

define i64 @"golden_entry"(ptr %".1", ptr %".2") nounwind "prefer-vector-width"="512"
{
entry:
  %"status" = alloca i64
  store i64 0, i64* %"status"
  %".5" = getelementptr inbounds i8, ptr %".1", i64 16
  %".6" = load ptr, ptr %".5"
  %".7" = getelementptr inbounds i8, ptr %".2", i64 16
  %".8" = load ptr, ptr %".7"
  call void @"golden_k0_reduce_sum"(ptr %".6", ptr %".8", i64* %"status")
  %".10" = load i64, i64* %"status"
  ret i64 %".10"
}

!0 = !{ !"llvm.loop.vectorize.width", i32 16 }
!1 = distinct !{!1, !0}