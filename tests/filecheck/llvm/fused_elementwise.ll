; ModuleID = "golden"
target triple = "x86_64-unknown-linux-gnu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

define internal void @"golden_k0_max"(ptr noalias %".1", ptr noalias %".2", ptr noalias %".3") nounwind "prefer-vector-width"="512"
{
entry:
  br label %"d0.head"
d0.head:
  %"d0" = phi  i64 [0, %"entry"], [%"d0.next", %"d1.exit"]
  %".6" = icmp slt i64 %"d0", 4
  br i1 %".6", label %"d0.body", label %"d0.exit"
d0.body:
  br label %"d1.head"
d0.exit:
  ret void
d1.head:
  %"d1" = phi  i64 [0, %"d0.body"], [%"d1.next", %"d1.body"]
  %".9" = icmp slt i64 %"d1", 8
  br i1 %".9", label %"d1.body", label %"d1.exit"
d1.body:
  %".11" = mul nuw nsw i64 %"d0", 8
  %".12" = add i64 %".11", %"d1"
  %".13" = getelementptr inbounds float, ptr %".2", i64 %".12"
  %".14" = load float, ptr %".13", align 4
  %".15" = fpext float %".14" to double
  %".16" = call double @"llvm.fabs.f64"(double %".15")
  %".17" = fcmp olt double %".16", 0x4310000000000000
  %".18" = select  i1 %".17", double %".15", double              0x0
  %".19" = fmul double %".18", 0x3fe45f306dc9c883
  %".20" = call double @"llvm.roundeven.f64"(double %".19")
  %".21" = fneg double %".20"
  %".22" = call double @"llvm.fma.f64"(double %".21", double 0x3ff921fb54442d18, double %".18")
  %".23" = call double @"llvm.fma.f64"(double %".21", double 0x3c91a62633145c07, double %".22")
  %".24" = call double @"llvm.fma.f64"(double %".21", double 0xb91f1976b7ed8fbc, double %".23")
  %".25" = fptosi double %".20" to i64
  %".26" = and i64 %".25", 3
  %".27" = fptrunc double %".24" to float
  %".28" = fmul float %".27", %".27"
  %".29" = fmul float %".28", %".27"
  %".30" = fmul float 0x3fe0000000000000, %".28"
  %".31" = fsub float 0x3ff0000000000000, %".30"
  %".32" = call float @"llvm.fma.f32"(float 0x3ec6db8ac0000000, float %".28", float 0xbf2a013980000000)
  %".33" = call float @"llvm.fma.f32"(float %".32", float %".28", float 0x3f811110e0000000)
  %".34" = call float @"llvm.fma.f32"(float %".33", float %".28", float 0xbfc5555560000000)
  %".35" = call float @"llvm.fma.f32"(float %".29", float %".34", float %".27")
  %".36" = fmul float %".28", %".28"
  %".37" = call float @"llvm.fma.f32"(float 0xbe92520ba0000000, float %".28", float 0x3efa015ba0000000)
  %".38" = call float @"llvm.fma.f32"(float %".37", float %".28", float 0xbf56c16c00000000)
  %".39" = call float @"llvm.fma.f32"(float %".38", float %".28", float 0x3fa5555560000000)
  %".40" = fsub float 0x3ff0000000000000, %".31"
  %".41" = fsub float %".40", %".30"
  %".42" = call float @"llvm.fma.f32"(float %".36", float %".39", float %".41")
  %".43" = fadd float %".31", %".42"
  %".44" = trunc i64 %".26" to i1
  %".45" = icmp uge i64 %".26", 2
  %".46" = select  i1 %".44", float %".43", float %".35"
  %".47" = fneg float %".46"
  %".48" = select  i1 %".45", float %".47", float %".46"
  %".49" = select  i1 %".17", float %".48", float 0x7ff8000000000000
  %".50" = fcmp oeq float %".14",              0x0
  %".51" = select  i1 %".50", float %".14", float %".49"
  %".52" = fcmp uno float %".14", %".14"
  %".53" = select  i1 %".52", float %".14", float %".51"
  %".54" = getelementptr inbounds float, ptr %".1", i64 %"d1"
  %".55" = load float, ptr %".54", align 4
  %".56" = fmul float %".53", %".55"
  %".57" = call float @"llvm.maximum.f32"(float %".56", float %".14")
  %".58" = getelementptr inbounds float, ptr %".3", i64 %".12"
  store float %".57", ptr %".58", align 4
  %"d1.next" = add nuw nsw i64 %"d1", 1
  br label %"d1.head"
d1.exit:
  %"d0.next" = add nuw nsw i64 %"d0", 1
  br label %"d0.head"
}

declare double @"llvm.fabs.f64"(double %".1")

declare double @"llvm.roundeven.f64"(double %".1")

declare double @"llvm.fma.f64"(double %".1", double %".2", double %".3")

declare float @"llvm.fma.f32"(float %".1", float %".2", float %".3")

declare float @"llvm.maximum.f32"(float %".1", float %".2")

define void @"golden_entry"(ptr %".1", ptr %".2", ptr %".3") nounwind "prefer-vector-width"="512"
{
entry:
  %".5" = getelementptr inbounds i8, ptr %".2", i64 16
  %".6" = load ptr, ptr %".5"
  %".7" = getelementptr inbounds i8, ptr %".1", i64 16
  %".8" = load ptr, ptr %".7"
  %".9" = getelementptr inbounds i8, ptr %".3", i64 16
  %".10" = load ptr, ptr %".9"
  call void @"golden_k0_max"(ptr %".6", ptr %".8", ptr %".10")
  ret void
}
