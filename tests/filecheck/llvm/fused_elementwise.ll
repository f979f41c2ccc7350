; ModuleID = "golden"
target triple = "x86_64-unknown-linux-gnu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

define internal void @"golden_k0_max"(ptr noalias %".1", ptr noalias %".2", ptr noalias %".3", ptr noalias %".4") noinline nounwind optsize "prefer-vector-width"="512"
{
entry:
  %"huge_trig_arg" = alloca i1
  store i1 0, i1* %"huge_trig_arg"
  br label %"d0.head"
d0.head:
  %"d0" = phi  i64 [0, %"entry"], [%"d0.next", %"d1.exit"]
  %".8" = icmp slt i64 %"d0", 4
  br i1 %".8", label %"d0.body", label %"d0.exit"
d0.body:
  br label %"d1.head"
d0.exit:
  %".72" = load i1, i1* %"huge_trig_arg"
  br i1 %".72", label %"then", label %"endif"
d1.head:
  %"d1" = phi  i64 [0, %"d0.body"], [%"d1.next", %"d1.body"]
  %".11" = icmp slt i64 %"d1", 8
  br i1 %".11", label %"d1.body", label %"d1.exit"
d1.body:
  %".13" = mul nuw nsw i64 %"d0", 8
  %".14" = add i64 %".13", %"d1"
  %".15" = getelementptr inbounds float, ptr %".2", i64 %".14"
  %".16" = load float, ptr %".15", align 4
  %".17" = fpext float %".16" to double
  %".18" = call double @"llvm.fabs.f64"(double %".17")
  %".19" = fcmp olt double %".18", 0x4310000000000000
  %".20" = xor i1 %".19", -1
  %".21" = fcmp olt double %".18", 0x7ff0000000000000
  %".22" = and i1 %".20", %".21"
  %".23" = select  i1 %".19", double %".17", double              0x0
  %".24" = fmul double %".23", 0x3fe45f306dc9c883
  %".25" = call double @"llvm.roundeven.f64"(double %".24")
  %".26" = fneg double %".25"
  %".27" = call double @"llvm.fma.f64"(double %".26", double 0x3ff921fb54442d18, double %".23")
  %".28" = call double @"llvm.fma.f64"(double %".26", double 0x3c91a62633145c07, double %".27")
  %".29" = call double @"llvm.fma.f64"(double %".26", double 0xb91f1976b7ed8fbc, double %".28")
  %".30" = fptosi double %".25" to i64
  %".31" = and i64 %".30", 3
  %".32" = load i1, i1* %"huge_trig_arg"
  %".33" = or i1 %".32", %".22"
  store i1 %".33", i1* %"huge_trig_arg"
  %".35" = fptrunc double %".29" to float
  %".36" = fmul float %".35", %".35"
  %".37" = fmul float %".36", %".35"
  %".38" = fmul float 0x3fe0000000000000, %".36"
  %".39" = fsub float 0x3ff0000000000000, %".38"
  %".40" = call float @"llvm.fma.f32"(float 0x3ec6db8ac0000000, float %".36", float 0xbf2a013980000000)
  %".41" = call float @"llvm.fma.f32"(float %".40", float %".36", float 0x3f811110e0000000)
  %".42" = call float @"llvm.fma.f32"(float %".41", float %".36", float 0xbfc5555560000000)
  %".43" = call float @"llvm.fma.f32"(float %".37", float %".42", float %".35")
  %".44" = fmul float %".36", %".36"
  %".45" = call float @"llvm.fma.f32"(float 0xbe92520ba0000000, float %".36", float 0x3efa015ba0000000)
  %".46" = call float @"llvm.fma.f32"(float %".45", float %".36", float 0xbf56c16c00000000)
  %".47" = call float @"llvm.fma.f32"(float %".46", float %".36", float 0x3fa5555560000000)
  %".48" = fsub float 0x3ff0000000000000, %".39"
  %".49" = fsub float %".48", %".38"
  %".50" = call float @"llvm.fma.f32"(float %".44", float %".47", float %".49")
  %".51" = fadd float %".39", %".50"
  %".52" = trunc i64 %".31" to i1
  %".53" = icmp uge i64 %".31", 2
  %".54" = select  i1 %".52", float %".51", float %".43"
  %".55" = fneg float %".54"
  %".56" = select  i1 %".53", float %".55", float %".54"
  %".57" = call float @"llvm.fabs.f32"(float %".16")
  %".58" = fcmp olt float %".57", 0x7ff0000000000000
  %".59" = select  i1 %".58", float %".56", float 0x7ff8000000000000
  %".60" = fcmp oeq float %".16",              0x0
  %".61" = select  i1 %".60", float %".16", float %".59"
  %".62" = fcmp uno float %".16", %".16"
  %".63" = select  i1 %".62", float %".16", float %".61"
  %".64" = getelementptr inbounds float, ptr %".1", i64 %"d1"
  %".65" = load float, ptr %".64", align 4
  %".66" = fmul float %".63", %".65"
  %".67" = call float @"llvm.maximum.f32"(float %".66", float %".16")
  %".68" = getelementptr inbounds float, ptr %".3", i64 %".14"
  store float %".67", ptr %".68", align 4
  %"d1.next" = add nuw nsw i64 %"d1", 1
  br label %"d1.head"
d1.exit:
  %"d0.next" = add nuw nsw i64 %"d0", 1
  br label %"d0.head"
then:
  br label %"d0.head.1"
endif:
  ret void
d0.head.1:
  %"d0.1" = phi  i64 [0, %"then"], [%"d0.next.1", %"d1.exit.1"]
  %".75" = icmp slt i64 %"d0.1", 4
  br i1 %".75", label %"d0.body.1", label %"d0.exit.1"
d0.body.1:
  br label %"d1.head.1"
d0.exit.1:
  br label %"endif"
d1.head.1:
  %"d1.1" = phi  i64 [0, %"d0.body.1"], [%"d1.next.1", %"d1.body.1"]
  %".78" = icmp slt i64 %"d1.1", 8
  br i1 %".78", label %"d1.body.1", label %"d1.exit.1"
d1.body.1:
  %".80" = mul nuw nsw i64 %"d0.1", 8
  %".81" = add i64 %".80", %"d1.1"
  %".82" = getelementptr inbounds float, ptr %".2", i64 %".81"
  %".83" = load float, ptr %".82", align 4
  %".84" = fpext float %".83" to double
  %".85" = call double @"llvm.fabs.f64"(double %".84")
  %".86" = fcmp olt double %".85", 0x4310000000000000
  %".87" = xor i1 %".86", -1
  %".88" = fcmp olt double %".85", 0x7ff0000000000000
  %".89" = and i1 %".87", %".88"
  %".90" = select  i1 %".86", double %".84", double              0x0
  %".91" = fmul double %".90", 0x3fe45f306dc9c883
  %".92" = call double @"llvm.roundeven.f64"(double %".91")
  %".93" = fneg double %".92"
  %".94" = call double @"llvm.fma.f64"(double %".93", double 0x3ff921fb54442d18, double %".90")
  %".95" = call double @"llvm.fma.f64"(double %".93", double 0x3c91a62633145c07, double %".94")
  %".96" = call double @"llvm.fma.f64"(double %".93", double 0xb91f1976b7ed8fbc, double %".95")
  %".97" = fptosi double %".92" to i64
  %".98" = and i64 %".97", 3
  %".99" = select  i1 %".89", double %".84", double 0x4310000000000000
  %".100" = bitcast double %".99" to i64
  %".101" = and i64 %".100", 9223372036854775807
  %".102" = lshr i64 %".101", 52
  %".103" = sub i64 %".102", 1075
  %".104" = and i64 %".101", 4503599627370495
  %".105" = or i64 %".104", 4503599627370496
  %".106" = lshr i64 %".105", 32
  %".107" = and i64 %".105", 4294967295
  %".108" = add i64 %".103", 30
  %".109" = icmp slt i64 %".108", 0
  %".110" = select  i1 %".109", i64 0, i64 %".108"
  %".111" = lshr i64 %".110", 5
  %".112" = and i64 %".110", 31
  %".113" = add i64 %".111", 0
  %".114" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".113"
  %".115" = load i64, [41 x i64]* %".114"
  %".116" = add i64 %".111", 1
  %".117" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".116"
  %".118" = load i64, [41 x i64]* %".117"
  %".119" = add i64 %".111", 2
  %".120" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".119"
  %".121" = load i64, [41 x i64]* %".120"
  %".122" = add i64 %".111", 3
  %".123" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".122"
  %".124" = load i64, [41 x i64]* %".123"
  %".125" = add i64 %".111", 4
  %".126" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".125"
  %".127" = load i64, [41 x i64]* %".126"
  %".128" = add i64 %".111", 5
  %".129" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".128"
  %".130" = load i64, [41 x i64]* %".129"
  %".131" = add i64 %".111", 6
  %".132" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".131"
  %".133" = load i64, [41 x i64]* %".132"
  %".134" = sub i64 32, %".112"
  %".135" = shl i64 %".115", 32
  %".136" = or i64 %".135", %".118"
  %".137" = lshr i64 %".136", %".134"
  %".138" = and i64 %".137", 4294967295
  %".139" = shl i64 %".118", 32
  %".140" = or i64 %".139", %".121"
  %".141" = lshr i64 %".140", %".134"
  %".142" = and i64 %".141", 4294967295
  %".143" = shl i64 %".121", 32
  %".144" = or i64 %".143", %".124"
  %".145" = lshr i64 %".144", %".134"
  %".146" = and i64 %".145", 4294967295
  %".147" = shl i64 %".124", 32
  %".148" = or i64 %".147", %".127"
  %".149" = lshr i64 %".148", %".134"
  %".150" = and i64 %".149", 4294967295
  %".151" = shl i64 %".127", 32
  %".152" = or i64 %".151", %".130"
  %".153" = lshr i64 %".152", %".134"
  %".154" = and i64 %".153", 4294967295
  %".155" = shl i64 %".130", 32
  %".156" = or i64 %".155", %".133"
  %".157" = lshr i64 %".156", %".134"
  %".158" = and i64 %".157", 4294967295
  %".159" = mul i64 %".107", %".138"
  %".160" = and i64 %".159", 4294967295
  %".161" = add i64 0, %".160"
  %".162" = mul i64 %".107", %".142"
  %".163" = and i64 %".162", 4294967295
  %".164" = add i64 0, %".163"
  %".165" = lshr i64 %".162", 32
  %".166" = add i64 %".161", %".165"
  %".167" = mul i64 %".106", %".142"
  %".168" = and i64 %".167", 4294967295
  %".169" = add i64 %".166", %".168"
  %".170" = mul i64 %".107", %".146"
  %".171" = and i64 %".170", 4294967295
  %".172" = add i64 0, %".171"
  %".173" = lshr i64 %".170", 32
  %".174" = add i64 %".164", %".173"
  %".175" = mul i64 %".106", %".146"
  %".176" = and i64 %".175", 4294967295
  %".177" = add i64 %".174", %".176"
  %".178" = lshr i64 %".175", 32
  %".179" = add i64 %".169", %".178"
  %".180" = mul i64 %".107", %".150"
  %".181" = and i64 %".180", 4294967295
  %".182" = add i64 0, %".181"
  %".183" = lshr i64 %".180", 32
  %".184" = add i64 %".172", %".183"
  %".185" = mul i64 %".106", %".150"
  %".186" = and i64 %".185", 4294967295
  %".187" = add i64 %".184", %".186"
  %".188" = lshr i64 %".185", 32
  %".189" = add i64 %".177", %".188"
  %".190" = mul i64 %".107", %".154"
  %".191" = and i64 %".190", 4294967295
  %".192" = add i64 0, %".191"
  %".193" = lshr i64 %".190", 32
  %".194" = add i64 %".182", %".193"
  %".195" = mul i64 %".106", %".154"
  %".196" = and i64 %".195", 4294967295
  %".197" = add i64 %".194", %".196"
  %".198" = lshr i64 %".195", 32
  %".199" = add i64 %".187", %".198"
  %".200" = mul i64 %".107", %".158"
  %".201" = and i64 %".200", 4294967295
  %".202" = add i64 0, %".201"
  %".203" = lshr i64 %".200", 32
  %".204" = add i64 %".192", %".203"
  %".205" = mul i64 %".106", %".158"
  %".206" = and i64 %".205", 4294967295
  %".207" = add i64 %".204", %".206"
  %".208" = lshr i64 %".205", 32
  %".209" = add i64 %".197", %".208"
  %".210" = lshr i64 %".202", 32
  %".211" = add i64 %".207", %".210"
  %".212" = and i64 %".202", 4294967295
  %".213" = lshr i64 %".211", 32
  %".214" = add i64 %".209", %".213"
  %".215" = and i64 %".211", 4294967295
  %".216" = lshr i64 %".214", 32
  %".217" = add i64 %".199", %".216"
  %".218" = and i64 %".214", 4294967295
  %".219" = lshr i64 %".217", 32
  %".220" = add i64 %".189", %".219"
  %".221" = and i64 %".217", 4294967295
  %".222" = lshr i64 %".220", 32
  %".223" = add i64 %".179", %".222"
  %".224" = and i64 %".220", 4294967295
  %".225" = and i64 %".223", 4294967295
  %".226" = lshr i64 %".225", 30
  %".227" = lshr i64 %".225", 29
  %".228" = and i64 %".227", 1
  %".229" = add i64 %".226", %".228"
  %".230" = and i64 %".225", 1073741823
  %".231" = uitofp i64 %".230" to double
  %".232" = fmul double %".231", 0x3e10000000000000
  %".233" = uitofp i64 %".228" to double
  %".234" = fsub double %".232", %".233"
  %".235" = uitofp i64 %".224" to double
  %".236" = fmul double %".235", 0x3c10000000000000
  %".237" = uitofp i64 %".221" to double
  %".238" = fmul double %".237", 0x3a10000000000000
  %".239" = uitofp i64 %".218" to double
  %".240" = fmul double %".239", 0x3810000000000000
  %".241" = fadd double %".234", %".236"
  %".242" = fsub double %".241", %".234"
  %".243" = fsub double %".241", %".242"
  %".244" = fsub double %".234", %".243"
  %".245" = fsub double %".236", %".242"
  %".246" = fadd double %".244", %".245"
  %".247" = fadd double %".241", %".238"
  %".248" = fsub double %".247", %".241"
  %".249" = fsub double %".247", %".248"
  %".250" = fsub double %".241", %".249"
  %".251" = fsub double %".238", %".248"
  %".252" = fadd double %".250", %".251"
  %".253" = fadd double %".247", %".240"
  %".254" = fsub double %".253", %".247"
  %".255" = fsub double %".253", %".254"
  %".256" = fsub double %".247", %".255"
  %".257" = fsub double %".240", %".254"
  %".258" = fadd double %".256", %".257"
  %".259" = uitofp i64 %".215" to double
  %".260" = fmul double %".259", 0x3610000000000000
  %".261" = fadd double %".260", %".246"
  %".262" = fadd double %".261", %".252"
  %".263" = fadd double %".262", %".258"
  %".264" = fadd double %".253", %".263"
  %".265" = fsub double %".264", %".253"
  %".266" = fsub double %".263", %".265"
  %".267" = fmul double %".264", 0x3ff921fb54442d18
  %".268" = fneg double %".267"
  %".269" = call double @"llvm.fma.f64"(double %".264", double 0x3ff921fb54442d18, double %".268")
  %".270" = fmul double %".264", 0x3c91a62633145c07
  %".271" = fmul double %".266", 0x3ff921fb54442d18
  %".272" = fadd double %".270", %".271"
  %".273" = fadd double %".269", %".272"
  %".274" = fadd double %".267", %".273"
  %".275" = fsub double %".274", %".267"
  %".276" = fsub double %".273", %".275"
  %".277" = icmp slt i64 %".100", 0
  %".278" = sub i64 0, %".229"
  %".279" = select  i1 %".277", i64 %".278", i64 %".229"
  %".280" = and i64 %".279", 3
  %".281" = fneg double %".274"
  %".282" = select  i1 %".277", double %".281", double %".274"
  %".283" = fneg double %".276"
  %".284" = select  i1 %".277", double %".283", double %".276"
  %".285" = select  i1 %".89", i64 %".280", i64 %".98"
  %".286" = fadd double %".282", %".284"
  %".287" = select  i1 %".89", double %".286", double %".96"
  %".288" = fptrunc double %".287" to float
  %".289" = fmul float %".288", %".288"
  %".290" = fmul float %".289", %".288"
  %".291" = fmul float 0x3fe0000000000000, %".289"
  %".292" = fsub float 0x3ff0000000000000, %".291"
  %".293" = call float @"llvm.fma.f32"(float 0x3ec6db8ac0000000, float %".289", float 0xbf2a013980000000)
  %".294" = call float @"llvm.fma.f32"(float %".293", float %".289", float 0x3f811110e0000000)
  %".295" = call float @"llvm.fma.f32"(float %".294", float %".289", float 0xbfc5555560000000)
  %".296" = call float @"llvm.fma.f32"(float %".290", float %".295", float %".288")
  %".297" = fmul float %".289", %".289"
  %".298" = call float @"llvm.fma.f32"(float 0xbe92520ba0000000, float %".289", float 0x3efa015ba0000000)
  %".299" = call float @"llvm.fma.f32"(float %".298", float %".289", float 0xbf56c16c00000000)
  %".300" = call float @"llvm.fma.f32"(float %".299", float %".289", float 0x3fa5555560000000)
  %".301" = fsub float 0x3ff0000000000000, %".292"
  %".302" = fsub float %".301", %".291"
  %".303" = call float @"llvm.fma.f32"(float %".297", float %".300", float %".302")
  %".304" = fadd float %".292", %".303"
  %".305" = trunc i64 %".285" to i1
  %".306" = icmp uge i64 %".285", 2
  %".307" = select  i1 %".305", float %".304", float %".296"
  %".308" = fneg float %".307"
  %".309" = select  i1 %".306", float %".308", float %".307"
  %".310" = call float @"llvm.fabs.f32"(float %".83")
  %".311" = fcmp olt float %".310", 0x7ff0000000000000
  %".312" = select  i1 %".311", float %".309", float 0x7ff8000000000000
  %".313" = fcmp oeq float %".83",              0x0
  %".314" = select  i1 %".313", float %".83", float %".312"
  %".315" = fcmp uno float %".83", %".83"
  %".316" = select  i1 %".315", float %".83", float %".314"
  %".317" = getelementptr inbounds float, ptr %".1", i64 %"d1.1"
  %".318" = load float, ptr %".317", align 4
  %".319" = fmul float %".316", %".318"
  %".320" = call float @"llvm.maximum.f32"(float %".319", float %".83")
  %".321" = getelementptr inbounds float, ptr %".3", i64 %".81"
  store float %".320", ptr %".321", align 4
  %"d1.next.1" = add nuw nsw i64 %"d1.1", 1
  br label %"d1.head.1"
d1.exit.1:
  %"d0.next.1" = add nuw nsw i64 %"d0.1", 1
  br label %"d0.head.1"
}

declare double @"llvm.fabs.f64"(double %".1")

declare double @"llvm.roundeven.f64"(double %".1")

declare double @"llvm.fma.f64"(double %".1", double %".2", double %".3")

declare float @"llvm.fma.f32"(float %".1", float %".2", float %".3")

declare float @"llvm.fabs.f32"(float %".1")

declare float @"llvm.maximum.f32"(float %".1", float %".2")

@"tp_two_over_pi_words" = internal constant [41 x i64] [i64 0, i64 2734261102, i64 1313084713, i64 4230436817, i64 4113882560, i64 3680671129, i64 1011060801, i64 4266746795, i64 3736847713, i64 3072618042, i64 1112396512, i64 105459434, i64 164729372, i64 4263373596, i64 2972297022, i64 3900847605, i64 784024708, i64 3919343654, i64 3026157121, i64 965858873, i64 2203269620, i64 2625920907, i64 3187222587, i64 536385535, i64 3724908559, i64 4012839307, i64 1510632735, i64 1832287951, i64 667617719, i64 1330003814, i64 2657085997, i64 1965537991, i64 3957715323, i64 1023883767, i64 2320667370, i64 1811636145, i64 529358088, i64 1443049542, i64 4235946923, i64 4040145952, i64 2599695901]
define i64 @"golden_entry"(ptr %".1", ptr %".2", ptr %".3") nounwind "prefer-vector-width"="512"
{
entry:
  %"status" = alloca i64
  store i64 0, i64* %"status"
  %".6" = getelementptr inbounds i8, ptr %".2", i64 16
  %".7" = load ptr, ptr %".6"
  %".8" = getelementptr inbounds i8, ptr %".1", i64 16
  %".9" = load ptr, ptr %".8"
  %".10" = getelementptr inbounds i8, ptr %".3", i64 16
  %".11" = load ptr, ptr %".10"
  call void @"golden_k0_max"(ptr %".7", ptr %".9", ptr %".11", i64* %"status")
  %".13" = load i64, i64* %"status"
  ret i64 %".13"
}
