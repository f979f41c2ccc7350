; ModuleID = "golden"
target triple = "x86_64-unknown-linux-gnu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

define internal void @"golden_k0_asinh"(ptr noalias %".1", ptr noalias %".2", ptr noalias %".3") noinline nounwind optsize "prefer-vector-width"="512" "tensorplay-cheap"
{
entry:
  br label %"i.head"
i.head:
  %"i" = phi  i64 [0, %"entry"], [%"i.next", %"i.body"]
  %".6" = icmp slt i64 %"i", 16
  br i1 %".6", label %"i.body", label %"i.exit"
i.body:
  %".8" = getelementptr inbounds double, ptr %".1", i64 %"i"
  %".9" = load double, ptr %".8", align 8
  %".10" = call double @"llvm.fabs.f64"(double %".9")
  %".11" = call double @"llvm.minnum.f64"(double %".10", double 0x41b0000000000000)
  %".12" = fmul double %".11", %".11"
  %".13" = fadd double 0x3ff0000000000000, %".12"
  %".14" = call double @"llvm.sqrt.f64"(double %".13")
  %".15" = fadd double 0x3ff0000000000000, %".14"
  %".16" = fdiv double %".12", %".15"
  %".17" = fadd double %".11", %".16"
  %".18" = fcmp ogt double %".17", 0xbff0000000000000
  %".19" = call double @"llvm.minnum.f64"(double %".17", double 0x7fefffffffffffff)
  %".20" = select  i1 %".18", double %".19", double              0x0
  %".21" = fadd double 0x3ff0000000000000, %".20"
  %".22" = fsub double %".21", 0x3ff0000000000000
  %".23" = fsub double %".20", %".22"
  %".24" = fdiv double %".23", %".21"
  %".25" = fcmp olt double %".21", 0x10000000000000
  %".26" = fmul double %".21", 0x4350000000000000
  %".27" = select  i1 %".25", double %".26", double %".21"
  %".28" = bitcast double %".27" to i64
  %".29" = lshr i64 %".28", 52
  %".30" = sub i64 %".29", 1023
  %".31" = select  i1 %".25", i64 54, i64 0
  %".32" = sub i64 %".30", %".31"
  %".33" = and i64 %".28", 4503599627370495
  %".34" = or i64 %".33", 4607182418800017408
  %".35" = bitcast i64 %".34" to double
  %".36" = fcmp ogt double %".35", 0x3ff6a09e667f3bcd
  %".37" = fmul double %".35", 0x3fe0000000000000
  %".38" = select  i1 %".36", double %".37", double %".35"
  %".39" = zext i1 %".36" to i64
  %".40" = add i64 %".32", %".39"
  %".41" = sitofp i64 %".40" to double
  %".42" = fsub double %".38", 0x3ff0000000000000
  %".43" = fmul double %".41", 0x3d2ef35793c76730
  %".44" = fadd double %".43", %".24"
  %".45" = fadd double 0x4000000000000000, %".42"
  %".46" = fdiv double %".42", %".45"
  %".47" = fmul double %".46", %".46"
  %".48" = call double @"llvm.fma.f64"(double 0x3fb8618618618618, double %".47", double 0x3fbaf286bca1af28)
  %".49" = call double @"llvm.fma.f64"(double %".48", double %".47", double 0x3fbe1e1e1e1e1e1e)
  %".50" = call double @"llvm.fma.f64"(double %".49", double %".47", double 0x3fc1111111111111)
  %".51" = call double @"llvm.fma.f64"(double %".50", double %".47", double 0x3fc3b13b13b13b14)
  %".52" = call double @"llvm.fma.f64"(double %".51", double %".47", double 0x3fc745d1745d1746)
  %".53" = call double @"llvm.fma.f64"(double %".52", double %".47", double 0x3fcc71c71c71c71c)
  %".54" = call double @"llvm.fma.f64"(double %".53", double %".47", double 0x3fd2492492492492)
  %".55" = call double @"llvm.fma.f64"(double %".54", double %".47", double 0x3fd999999999999a)
  %".56" = call double @"llvm.fma.f64"(double %".55", double %".47", double 0x3fe5555555555555)
  %".57" = fmul double %".47", %".56"
  %".58" = fmul double 0x3fe0000000000000, %".42"
  %".59" = fmul double %".58", %".42"
  %".60" = fadd double %".59", %".57"
  %".61" = call double @"llvm.fma.f64"(double %".46", double %".60", double %".44")
  %".62" = fsub double %".59", %".61"
  %".63" = fmul double %".41", 0x3fe62e42fefa3800
  %".64" = fsub double %".62", %".42"
  %".65" = fsub double %".63", %".64"
  %".66" = fcmp oeq double %".17",              0x0
  %".67" = select  i1 %".66", double %".17", double %".65"
  %".68" = fcmp oeq double %".17", 0xbff0000000000000
  %".69" = select  i1 %".68", double 0xfff0000000000000, double %".67"
  %".70" = fcmp oeq double %".17", 0x7ff0000000000000
  %".71" = select  i1 %".70", double 0x7ff0000000000000, double %".69"
  %".72" = fcmp olt double %".17", 0xbff0000000000000
  %".73" = select  i1 %".72", double 0x7ff8000000000000, double %".71"
  %".74" = fcmp uno double %".17", %".17"
  %".75" = select  i1 %".74", double %".17", double %".73"
  %".76" = fcmp ogt double %".10", 0x41b0000000000000
  %".77" = fcmp ogt double %".10",              0x0
  %".78" = select  i1 %".77", double %".10", double 0x3ff0000000000000
  %".79" = call double @"llvm.minnum.f64"(double %".78", double 0x7fefffffffffffff)
  %".80" = fcmp olt double %".79", 0x10000000000000
  %".81" = fmul double %".79", 0x4350000000000000
  %".82" = select  i1 %".80", double %".81", double %".79"
  %".83" = bitcast double %".82" to i64
  %".84" = lshr i64 %".83", 52
  %".85" = sub i64 %".84", 1023
  %".86" = select  i1 %".80", i64 54, i64 0
  %".87" = sub i64 %".85", %".86"
  %".88" = and i64 %".83", 4503599627370495
  %".89" = or i64 %".88", 4607182418800017408
  %".90" = bitcast i64 %".89" to double
  %".91" = fcmp ogt double %".90", 0x3ff6a09e667f3bcd
  %".92" = fmul double %".90", 0x3fe0000000000000
  %".93" = select  i1 %".91", double %".92", double %".90"
  %".94" = zext i1 %".91" to i64
  %".95" = add i64 %".87", %".94"
  %".96" = sitofp i64 %".95" to double
  %".97" = fsub double %".93", 0x3ff0000000000000
  %".98" = fmul double %".96", 0x3d2ef35793c76730
  %".99" = fadd double 0x4000000000000000, %".97"
  %".100" = fdiv double %".97", %".99"
  %".101" = fmul double %".100", %".100"
  %".102" = call double @"llvm.fma.f64"(double 0x3fb8618618618618, double %".101", double 0x3fbaf286bca1af28)
  %".103" = call double @"llvm.fma.f64"(double %".102", double %".101", double 0x3fbe1e1e1e1e1e1e)
  %".104" = call double @"llvm.fma.f64"(double %".103", double %".101", double 0x3fc1111111111111)
  %".105" = call double @"llvm.fma.f64"(double %".104", double %".101", double 0x3fc3b13b13b13b14)
  %".106" = call double @"llvm.fma.f64"(double %".105", double %".101", double 0x3fc745d1745d1746)
  %".107" = call double @"llvm.fma.f64"(double %".106", double %".101", double 0x3fcc71c71c71c71c)
  %".108" = call double @"llvm.fma.f64"(double %".107", double %".101", double 0x3fd2492492492492)
  %".109" = call double @"llvm.fma.f64"(double %".108", double %".101", double 0x3fd999999999999a)
  %".110" = call double @"llvm.fma.f64"(double %".109", double %".101", double 0x3fe5555555555555)
  %".111" = fmul double %".101", %".110"
  %".112" = fmul double 0x3fe0000000000000, %".97"
  %".113" = fmul double %".112", %".97"
  %".114" = fadd double %".113", %".111"
  %".115" = call double @"llvm.fma.f64"(double %".100", double %".114", double %".98")
  %".116" = fsub double %".113", %".115"
  %".117" = fmul double %".96", 0x3fe62e42fefa3800
  %".118" = fsub double %".116", %".97"
  %".119" = fsub double %".117", %".118"
  %".120" = fcmp oeq double %".10",              0x0
  %".121" = select  i1 %".120", double 0xfff0000000000000, double %".119"
  %".122" = fcmp oeq double %".10", 0x7ff0000000000000
  %".123" = select  i1 %".122", double 0x7ff0000000000000, double %".121"
  %".124" = fcmp olt double %".10",              0x0
  %".125" = select  i1 %".124", double 0x7ff8000000000000, double %".123"
  %".126" = fcmp uno double %".10", %".10"
  %".127" = select  i1 %".126", double %".10", double %".125"
  %".128" = fadd double %".127", 0x3fe62e42fefa39ef
  %".129" = select  i1 %".76", double %".128", double %".75"
  %".130" = fcmp uno double %".9", %".9"
  %".131" = select  i1 %".130", double %".9", double %".129"
  %".132" = call double @"llvm.copysign.f64"(double %".131", double %".9")
  %".133" = getelementptr inbounds double, ptr %".2", i64 %"i"
  store double %".132", ptr %".133", align 8
  %"i.next" = add nuw nsw i64 %"i", 1
  br label %"i.head"
i.exit:
  ret void
}

declare double @"llvm.fabs.f64"(double %".1")

declare double @"llvm.minnum.f64"(double %".1", double %".2")

declare double @"llvm.sqrt.f64"(double %".1")

declare double @"llvm.fma.f64"(double %".1", double %".2", double %".3")

declare double @"llvm.copysign.f64"(double %".1", double %".2")

define i64 @"golden_entry"(ptr %".1", ptr %".2") nounwind "prefer-vector-width"="512"
{
entry:
  %"status" = alloca i64
  store i64 0, i64* %"status"
  %".5" = getelementptr inbounds i8, ptr %".1", i64 16
  %".6" = load ptr, ptr %".5"
  %".7" = getelementptr inbounds i8, ptr %".2", i64 16
  %".8" = load ptr, ptr %".7"
  call void @"golden_k0_asinh"(ptr %".6", ptr %".8", i64* %"status")
  %".10" = load i64, i64* %"status"
  ret i64 %".10"
}
