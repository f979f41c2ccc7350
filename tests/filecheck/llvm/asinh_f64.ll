; ModuleID = "golden"
target triple = "x86_64-unknown-linux-gnu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

define internal void @"golden_k0_asinh"(ptr noalias %".1", ptr noalias %".2", i64 %".3", i64 %".4") nounwind "prefer-vector-width"="512"
{
entry:
  br label %"i.head"
i.head:
  %"i" = phi  i64 [%".3", %"entry"], [%"i.next", %"i.body"]
  %".7" = icmp slt i64 %"i", %".4"
  br i1 %".7", label %"i.body", label %"i.exit"
i.body:
  %".9" = getelementptr inbounds double, ptr %".1", i64 %"i"
  %".10" = load double, ptr %".9", align 8
  %".11" = call double @"llvm.fabs.f64"(double %".10")
  %".12" = call double @"llvm.minnum.f64"(double %".11", double 0x41b0000000000000)
  %".13" = fmul double %".12", %".12"
  %".14" = fadd double 0x3ff0000000000000, %".13"
  %".15" = call double @"llvm.sqrt.f64"(double %".14")
  %".16" = fadd double 0x3ff0000000000000, %".15"
  %".17" = fdiv double %".13", %".16"
  %".18" = fadd double %".12", %".17"
  %".19" = fcmp ogt double %".18", 0xbff0000000000000
  %".20" = call double @"llvm.minnum.f64"(double %".18", double 0x7fefffffffffffff)
  %".21" = select  i1 %".19", double %".20", double              0x0
  %".22" = fadd double 0x3ff0000000000000, %".21"
  %".23" = fsub double %".22", 0x3ff0000000000000
  %".24" = fsub double %".21", %".23"
  %".25" = fdiv double %".24", %".22"
  %".26" = fcmp olt double %".22", 0x10000000000000
  %".27" = fmul double %".22", 0x4350000000000000
  %".28" = select  i1 %".26", double %".27", double %".22"
  %".29" = bitcast double %".28" to i64
  %".30" = lshr i64 %".29", 52
  %".31" = sub i64 %".30", 1023
  %".32" = select  i1 %".26", i64 54, i64 0
  %".33" = sub i64 %".31", %".32"
  %".34" = and i64 %".29", 4503599627370495
  %".35" = or i64 %".34", 4607182418800017408
  %".36" = bitcast i64 %".35" to double
  %".37" = fcmp ogt double %".36", 0x3ff6a09e667f3bcd
  %".38" = fmul double %".36", 0x3fe0000000000000
  %".39" = select  i1 %".37", double %".38", double %".36"
  %".40" = zext i1 %".37" to i64
  %".41" = add i64 %".33", %".40"
  %".42" = sitofp i64 %".41" to double
  %".43" = fsub double %".39", 0x3ff0000000000000
  %".44" = fmul double %".42", 0x3d2ef35793c76730
  %".45" = fadd double %".44", %".25"
  %".46" = fadd double 0x4000000000000000, %".43"
  %".47" = fdiv double %".43", %".46"
  %".48" = fmul double %".47", %".47"
  %".49" = call double @"llvm.fma.f64"(double 0x3fb8618618618618, double %".48", double 0x3fbaf286bca1af28)
  %".50" = call double @"llvm.fma.f64"(double %".49", double %".48", double 0x3fbe1e1e1e1e1e1e)
  %".51" = call double @"llvm.fma.f64"(double %".50", double %".48", double 0x3fc1111111111111)
  %".52" = call double @"llvm.fma.f64"(double %".51", double %".48", double 0x3fc3b13b13b13b14)
  %".53" = call double @"llvm.fma.f64"(double %".52", double %".48", double 0x3fc745d1745d1746)
  %".54" = call double @"llvm.fma.f64"(double %".53", double %".48", double 0x3fcc71c71c71c71c)
  %".55" = call double @"llvm.fma.f64"(double %".54", double %".48", double 0x3fd2492492492492)
  %".56" = call double @"llvm.fma.f64"(double %".55", double %".48", double 0x3fd999999999999a)
  %".57" = call double @"llvm.fma.f64"(double %".56", double %".48", double 0x3fe5555555555555)
  %".58" = fmul double %".48", %".57"
  %".59" = fmul double 0x3fe0000000000000, %".43"
  %".60" = fmul double %".59", %".43"
  %".61" = fadd double %".60", %".58"
  %".62" = call double @"llvm.fma.f64"(double %".47", double %".61", double %".45")
  %".63" = fsub double %".60", %".62"
  %".64" = fmul double %".42", 0x3fe62e42fefa3800
  %".65" = fsub double %".63", %".43"
  %".66" = fsub double %".64", %".65"
  %".67" = fcmp oeq double %".18",              0x0
  %".68" = select  i1 %".67", double %".18", double %".66"
  %".69" = fcmp oeq double %".18", 0xbff0000000000000
  %".70" = select  i1 %".69", double 0xfff0000000000000, double %".68"
  %".71" = fcmp oeq double %".18", 0x7ff0000000000000
  %".72" = select  i1 %".71", double 0x7ff0000000000000, double %".70"
  %".73" = fcmp olt double %".18", 0xbff0000000000000
  %".74" = select  i1 %".73", double 0x7ff8000000000000, double %".72"
  %".75" = fcmp uno double %".18", %".18"
  %".76" = select  i1 %".75", double %".18", double %".74"
  %".77" = fcmp ogt double %".11", 0x41b0000000000000
  %".78" = fcmp ogt double %".11",              0x0
  %".79" = select  i1 %".78", double %".11", double 0x3ff0000000000000
  %".80" = call double @"llvm.minnum.f64"(double %".79", double 0x7fefffffffffffff)
  %".81" = fcmp olt double %".80", 0x10000000000000
  %".82" = fmul double %".80", 0x4350000000000000
  %".83" = select  i1 %".81", double %".82", double %".80"
  %".84" = bitcast double %".83" to i64
  %".85" = lshr i64 %".84", 52
  %".86" = sub i64 %".85", 1023
  %".87" = select  i1 %".81", i64 54, i64 0
  %".88" = sub i64 %".86", %".87"
  %".89" = and i64 %".84", 4503599627370495
  %".90" = or i64 %".89", 4607182418800017408
  %".91" = bitcast i64 %".90" to double
  %".92" = fcmp ogt double %".91", 0x3ff6a09e667f3bcd
  %".93" = fmul double %".91", 0x3fe0000000000000
  %".94" = select  i1 %".92", double %".93", double %".91"
  %".95" = zext i1 %".92" to i64
  %".96" = add i64 %".88", %".95"
  %".97" = sitofp i64 %".96" to double
  %".98" = fsub double %".94", 0x3ff0000000000000
  %".99" = fmul double %".97", 0x3d2ef35793c76730
  %".100" = fadd double 0x4000000000000000, %".98"
  %".101" = fdiv double %".98", %".100"
  %".102" = fmul double %".101", %".101"
  %".103" = call double @"llvm.fma.f64"(double 0x3fb8618618618618, double %".102", double 0x3fbaf286bca1af28)
  %".104" = call double @"llvm.fma.f64"(double %".103", double %".102", double 0x3fbe1e1e1e1e1e1e)
  %".105" = call double @"llvm.fma.f64"(double %".104", double %".102", double 0x3fc1111111111111)
  %".106" = call double @"llvm.fma.f64"(double %".105", double %".102", double 0x3fc3b13b13b13b14)
  %".107" = call double @"llvm.fma.f64"(double %".106", double %".102", double 0x3fc745d1745d1746)
  %".108" = call double @"llvm.fma.f64"(double %".107", double %".102", double 0x3fcc71c71c71c71c)
  %".109" = call double @"llvm.fma.f64"(double %".108", double %".102", double 0x3fd2492492492492)
  %".110" = call double @"llvm.fma.f64"(double %".109", double %".102", double 0x3fd999999999999a)
  %".111" = call double @"llvm.fma.f64"(double %".110", double %".102", double 0x3fe5555555555555)
  %".112" = fmul double %".102", %".111"
  %".113" = fmul double 0x3fe0000000000000, %".98"
  %".114" = fmul double %".113", %".98"
  %".115" = fadd double %".114", %".112"
  %".116" = call double @"llvm.fma.f64"(double %".101", double %".115", double %".99")
  %".117" = fsub double %".114", %".116"
  %".118" = fmul double %".97", 0x3fe62e42fefa3800
  %".119" = fsub double %".117", %".98"
  %".120" = fsub double %".118", %".119"
  %".121" = fcmp oeq double %".11",              0x0
  %".122" = select  i1 %".121", double 0xfff0000000000000, double %".120"
  %".123" = fcmp oeq double %".11", 0x7ff0000000000000
  %".124" = select  i1 %".123", double 0x7ff0000000000000, double %".122"
  %".125" = fcmp olt double %".11",              0x0
  %".126" = select  i1 %".125", double 0x7ff8000000000000, double %".124"
  %".127" = fcmp uno double %".11", %".11"
  %".128" = select  i1 %".127", double %".11", double %".126"
  %".129" = fadd double %".128", 0x3fe62e42fefa39ef
  %".130" = select  i1 %".77", double %".129", double %".76"
  %".131" = fcmp uno double %".10", %".10"
  %".132" = select  i1 %".131", double %".10", double %".130"
  %".133" = call double @"llvm.copysign.f64"(double %".132", double %".10")
  %".134" = getelementptr inbounds double, ptr %".2", i64 %"i"
  store double %".133", ptr %".134", align 8
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

define void @"golden_entry"(ptr %".1", ptr %".2", i64 %".3", i64 %".4") nounwind "prefer-vector-width"="512"
{
entry:
  %".6" = getelementptr inbounds i8, ptr %".1", i64 16
  %".7" = load ptr, ptr %".6"
  %".8" = getelementptr inbounds i8, ptr %".2", i64 16
  %".9" = load ptr, ptr %".8"
  call void @"golden_k0_asinh"(ptr %".7", ptr %".9", i64 %".3", i64 %".4")
  ret void
}
