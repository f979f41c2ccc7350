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
  %".73" = load i1, i1* %"huge_trig_arg"
  br i1 %".73", label %"then", label %"endif"
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
  %".30" = fadd double %".25", 0x4338000000000000
  %".31" = bitcast double %".30" to i64
  %".32" = and i64 %".31", 3
  %".33" = load i1, i1* %"huge_trig_arg"
  %".34" = or i1 %".33", %".22"
  store i1 %".34", i1* %"huge_trig_arg"
  %".36" = fptrunc double %".29" to float
  %".37" = fmul float %".36", %".36"
  %".38" = fmul float %".37", %".36"
  %".39" = fmul float 0x3fe0000000000000, %".37"
  %".40" = fsub float 0x3ff0000000000000, %".39"
  %".41" = call float @"llvm.fma.f32"(float 0x3ec6db8ac0000000, float %".37", float 0xbf2a013980000000)
  %".42" = call float @"llvm.fma.f32"(float %".41", float %".37", float 0x3f811110e0000000)
  %".43" = call float @"llvm.fma.f32"(float %".42", float %".37", float 0xbfc5555560000000)
  %".44" = call float @"llvm.fma.f32"(float %".38", float %".43", float %".36")
  %".45" = fmul float %".37", %".37"
  %".46" = call float @"llvm.fma.f32"(float 0xbe92520ba0000000, float %".37", float 0x3efa015ba0000000)
  %".47" = call float @"llvm.fma.f32"(float %".46", float %".37", float 0xbf56c16c00000000)
  %".48" = call float @"llvm.fma.f32"(float %".47", float %".37", float 0x3fa5555560000000)
  %".49" = fsub float 0x3ff0000000000000, %".40"
  %".50" = fsub float %".49", %".39"
  %".51" = call float @"llvm.fma.f32"(float %".45", float %".48", float %".50")
  %".52" = fadd float %".40", %".51"
  %".53" = trunc i64 %".32" to i1
  %".54" = icmp uge i64 %".32", 2
  %".55" = select  i1 %".53", float %".52", float %".44"
  %".56" = fneg float %".55"
  %".57" = select  i1 %".54", float %".56", float %".55"
  %".58" = call float @"llvm.fabs.f32"(float %".16")
  %".59" = fcmp olt float %".58", 0x7ff0000000000000
  %".60" = select  i1 %".59", float %".57", float 0x7ff8000000000000
  %".61" = fcmp oeq float %".16",              0x0
  %".62" = select  i1 %".61", float %".16", float %".60"
  %".63" = fcmp uno float %".16", %".16"
  %".64" = select  i1 %".63", float %".16", float %".62"
  %".65" = getelementptr inbounds float, ptr %".1", i64 %"d1"
  %".66" = load float, ptr %".65", align 4
  %".67" = fmul float %".64", %".66"
  %".68" = call float @"llvm.maximum.f32"(float %".67", float %".16")
  %".69" = getelementptr inbounds float, ptr %".3", i64 %".14"
  store float %".68", ptr %".69", align 4
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
  %".76" = icmp slt i64 %"d0.1", 4
  br i1 %".76", label %"d0.body.1", label %"d0.exit.1"
d0.body.1:
  br label %"d1.head.1"
d0.exit.1:
  br label %"endif"
d1.head.1:
  %"d1.1" = phi  i64 [0, %"d0.body.1"], [%"d1.next.1", %"d1.body.1"]
  %".79" = icmp slt i64 %"d1.1", 8
  br i1 %".79", label %"d1.body.1", label %"d1.exit.1"
d1.body.1:
  %".81" = mul nuw nsw i64 %"d0.1", 8
  %".82" = add i64 %".81", %"d1.1"
  %".83" = getelementptr inbounds float, ptr %".2", i64 %".82"
  %".84" = load float, ptr %".83", align 4
  %".85" = fpext float %".84" to double
  %".86" = call double @"llvm.fabs.f64"(double %".85")
  %".87" = fcmp olt double %".86", 0x4310000000000000
  %".88" = xor i1 %".87", -1
  %".89" = fcmp olt double %".86", 0x7ff0000000000000
  %".90" = and i1 %".88", %".89"
  %".91" = select  i1 %".87", double %".85", double              0x0
  %".92" = fmul double %".91", 0x3fe45f306dc9c883
  %".93" = call double @"llvm.roundeven.f64"(double %".92")
  %".94" = fneg double %".93"
  %".95" = call double @"llvm.fma.f64"(double %".94", double 0x3ff921fb54442d18, double %".91")
  %".96" = call double @"llvm.fma.f64"(double %".94", double 0x3c91a62633145c07, double %".95")
  %".97" = call double @"llvm.fma.f64"(double %".94", double 0xb91f1976b7ed8fbc, double %".96")
  %".98" = fadd double %".93", 0x4338000000000000
  %".99" = bitcast double %".98" to i64
  %".100" = and i64 %".99", 3
  %".101" = select  i1 %".90", double %".85", double 0x4310000000000000
  %".102" = bitcast double %".101" to i64
  %".103" = and i64 %".102", 9223372036854775807
  %".104" = lshr i64 %".103", 52
  %".105" = sub i64 %".104", 1075
  %".106" = and i64 %".103", 4503599627370495
  %".107" = or i64 %".106", 4503599627370496
  %".108" = lshr i64 %".107", 32
  %".109" = and i64 %".107", 4294967295
  %".110" = add i64 %".105", 30
  %".111" = icmp slt i64 %".110", 0
  %".112" = select  i1 %".111", i64 0, i64 %".110"
  %".113" = lshr i64 %".112", 5
  %".114" = and i64 %".112", 31
  %".115" = add i64 %".113", 0
  %".116" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".115"
  %".117" = load i64, [41 x i64]* %".116"
  %".118" = add i64 %".113", 1
  %".119" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".118"
  %".120" = load i64, [41 x i64]* %".119"
  %".121" = add i64 %".113", 2
  %".122" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".121"
  %".123" = load i64, [41 x i64]* %".122"
  %".124" = add i64 %".113", 3
  %".125" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".124"
  %".126" = load i64, [41 x i64]* %".125"
  %".127" = add i64 %".113", 4
  %".128" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".127"
  %".129" = load i64, [41 x i64]* %".128"
  %".130" = add i64 %".113", 5
  %".131" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".130"
  %".132" = load i64, [41 x i64]* %".131"
  %".133" = add i64 %".113", 6
  %".134" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".133"
  %".135" = load i64, [41 x i64]* %".134"
  %".136" = sub i64 32, %".114"
  %".137" = shl i64 %".117", 32
  %".138" = or i64 %".137", %".120"
  %".139" = lshr i64 %".138", %".136"
  %".140" = and i64 %".139", 4294967295
  %".141" = shl i64 %".120", 32
  %".142" = or i64 %".141", %".123"
  %".143" = lshr i64 %".142", %".136"
  %".144" = and i64 %".143", 4294967295
  %".145" = shl i64 %".123", 32
  %".146" = or i64 %".145", %".126"
  %".147" = lshr i64 %".146", %".136"
  %".148" = and i64 %".147", 4294967295
  %".149" = shl i64 %".126", 32
  %".150" = or i64 %".149", %".129"
  %".151" = lshr i64 %".150", %".136"
  %".152" = and i64 %".151", 4294967295
  %".153" = shl i64 %".129", 32
  %".154" = or i64 %".153", %".132"
  %".155" = lshr i64 %".154", %".136"
  %".156" = and i64 %".155", 4294967295
  %".157" = shl i64 %".132", 32
  %".158" = or i64 %".157", %".135"
  %".159" = lshr i64 %".158", %".136"
  %".160" = and i64 %".159", 4294967295
  %".161" = mul i64 %".109", %".140"
  %".162" = and i64 %".161", 4294967295
  %".163" = add i64 0, %".162"
  %".164" = mul i64 %".109", %".144"
  %".165" = and i64 %".164", 4294967295
  %".166" = add i64 0, %".165"
  %".167" = lshr i64 %".164", 32
  %".168" = add i64 %".163", %".167"
  %".169" = mul i64 %".108", %".144"
  %".170" = and i64 %".169", 4294967295
  %".171" = add i64 %".168", %".170"
  %".172" = mul i64 %".109", %".148"
  %".173" = and i64 %".172", 4294967295
  %".174" = add i64 0, %".173"
  %".175" = lshr i64 %".172", 32
  %".176" = add i64 %".166", %".175"
  %".177" = mul i64 %".108", %".148"
  %".178" = and i64 %".177", 4294967295
  %".179" = add i64 %".176", %".178"
  %".180" = lshr i64 %".177", 32
  %".181" = add i64 %".171", %".180"
  %".182" = mul i64 %".109", %".152"
  %".183" = and i64 %".182", 4294967295
  %".184" = add i64 0, %".183"
  %".185" = lshr i64 %".182", 32
  %".186" = add i64 %".174", %".185"
  %".187" = mul i64 %".108", %".152"
  %".188" = and i64 %".187", 4294967295
  %".189" = add i64 %".186", %".188"
  %".190" = lshr i64 %".187", 32
  %".191" = add i64 %".179", %".190"
  %".192" = mul i64 %".109", %".156"
  %".193" = and i64 %".192", 4294967295
  %".194" = add i64 0, %".193"
  %".195" = lshr i64 %".192", 32
  %".196" = add i64 %".184", %".195"
  %".197" = mul i64 %".108", %".156"
  %".198" = and i64 %".197", 4294967295
  %".199" = add i64 %".196", %".198"
  %".200" = lshr i64 %".197", 32
  %".201" = add i64 %".189", %".200"
  %".202" = mul i64 %".109", %".160"
  %".203" = and i64 %".202", 4294967295
  %".204" = add i64 0, %".203"
  %".205" = lshr i64 %".202", 32
  %".206" = add i64 %".194", %".205"
  %".207" = mul i64 %".108", %".160"
  %".208" = and i64 %".207", 4294967295
  %".209" = add i64 %".206", %".208"
  %".210" = lshr i64 %".207", 32
  %".211" = add i64 %".199", %".210"
  %".212" = lshr i64 %".204", 32
  %".213" = add i64 %".209", %".212"
  %".214" = and i64 %".204", 4294967295
  %".215" = lshr i64 %".213", 32
  %".216" = add i64 %".211", %".215"
  %".217" = and i64 %".213", 4294967295
  %".218" = lshr i64 %".216", 32
  %".219" = add i64 %".201", %".218"
  %".220" = and i64 %".216", 4294967295
  %".221" = lshr i64 %".219", 32
  %".222" = add i64 %".191", %".221"
  %".223" = and i64 %".219", 4294967295
  %".224" = lshr i64 %".222", 32
  %".225" = add i64 %".181", %".224"
  %".226" = and i64 %".222", 4294967295
  %".227" = and i64 %".225", 4294967295
  %".228" = lshr i64 %".227", 30
  %".229" = lshr i64 %".227", 29
  %".230" = and i64 %".229", 1
  %".231" = add i64 %".228", %".230"
  %".232" = and i64 %".227", 1073741823
  %".233" = uitofp i64 %".232" to double
  %".234" = fmul double %".233", 0x3e10000000000000
  %".235" = uitofp i64 %".230" to double
  %".236" = fsub double %".234", %".235"
  %".237" = uitofp i64 %".226" to double
  %".238" = fmul double %".237", 0x3c10000000000000
  %".239" = uitofp i64 %".223" to double
  %".240" = fmul double %".239", 0x3a10000000000000
  %".241" = uitofp i64 %".220" to double
  %".242" = fmul double %".241", 0x3810000000000000
  %".243" = fadd double %".236", %".238"
  %".244" = fsub double %".243", %".236"
  %".245" = fsub double %".243", %".244"
  %".246" = fsub double %".236", %".245"
  %".247" = fsub double %".238", %".244"
  %".248" = fadd double %".246", %".247"
  %".249" = fadd double %".243", %".240"
  %".250" = fsub double %".249", %".243"
  %".251" = fsub double %".249", %".250"
  %".252" = fsub double %".243", %".251"
  %".253" = fsub double %".240", %".250"
  %".254" = fadd double %".252", %".253"
  %".255" = fadd double %".249", %".242"
  %".256" = fsub double %".255", %".249"
  %".257" = fsub double %".255", %".256"
  %".258" = fsub double %".249", %".257"
  %".259" = fsub double %".242", %".256"
  %".260" = fadd double %".258", %".259"
  %".261" = uitofp i64 %".217" to double
  %".262" = fmul double %".261", 0x3610000000000000
  %".263" = fadd double %".262", %".248"
  %".264" = fadd double %".263", %".254"
  %".265" = fadd double %".264", %".260"
  %".266" = fadd double %".255", %".265"
  %".267" = fsub double %".266", %".255"
  %".268" = fsub double %".265", %".267"
  %".269" = fmul double %".266", 0x3ff921fb54442d18
  %".270" = fneg double %".269"
  %".271" = call double @"llvm.fma.f64"(double %".266", double 0x3ff921fb54442d18, double %".270")
  %".272" = fmul double %".266", 0x3c91a62633145c07
  %".273" = fmul double %".268", 0x3ff921fb54442d18
  %".274" = fadd double %".272", %".273"
  %".275" = fadd double %".271", %".274"
  %".276" = fadd double %".269", %".275"
  %".277" = fsub double %".276", %".269"
  %".278" = fsub double %".275", %".277"
  %".279" = icmp slt i64 %".102", 0
  %".280" = sub i64 0, %".231"
  %".281" = select  i1 %".279", i64 %".280", i64 %".231"
  %".282" = and i64 %".281", 3
  %".283" = fneg double %".276"
  %".284" = select  i1 %".279", double %".283", double %".276"
  %".285" = fneg double %".278"
  %".286" = select  i1 %".279", double %".285", double %".278"
  %".287" = select  i1 %".90", i64 %".282", i64 %".100"
  %".288" = fadd double %".284", %".286"
  %".289" = select  i1 %".90", double %".288", double %".97"
  %".290" = fptrunc double %".289" to float
  %".291" = fmul float %".290", %".290"
  %".292" = fmul float %".291", %".290"
  %".293" = fmul float 0x3fe0000000000000, %".291"
  %".294" = fsub float 0x3ff0000000000000, %".293"
  %".295" = call float @"llvm.fma.f32"(float 0x3ec6db8ac0000000, float %".291", float 0xbf2a013980000000)
  %".296" = call float @"llvm.fma.f32"(float %".295", float %".291", float 0x3f811110e0000000)
  %".297" = call float @"llvm.fma.f32"(float %".296", float %".291", float 0xbfc5555560000000)
  %".298" = call float @"llvm.fma.f32"(float %".292", float %".297", float %".290")
  %".299" = fmul float %".291", %".291"
  %".300" = call float @"llvm.fma.f32"(float 0xbe92520ba0000000, float %".291", float 0x3efa015ba0000000)
  %".301" = call float @"llvm.fma.f32"(float %".300", float %".291", float 0xbf56c16c00000000)
  %".302" = call float @"llvm.fma.f32"(float %".301", float %".291", float 0x3fa5555560000000)
  %".303" = fsub float 0x3ff0000000000000, %".294"
  %".304" = fsub float %".303", %".293"
  %".305" = call float @"llvm.fma.f32"(float %".299", float %".302", float %".304")
  %".306" = fadd float %".294", %".305"
  %".307" = trunc i64 %".287" to i1
  %".308" = icmp uge i64 %".287", 2
  %".309" = select  i1 %".307", float %".306", float %".298"
  %".310" = fneg float %".309"
  %".311" = select  i1 %".308", float %".310", float %".309"
  %".312" = call float @"llvm.fabs.f32"(float %".84")
  %".313" = fcmp olt float %".312", 0x7ff0000000000000
  %".314" = select  i1 %".313", float %".311", float 0x7ff8000000000000
  %".315" = fcmp oeq float %".84",              0x0
  %".316" = select  i1 %".315", float %".84", float %".314"
  %".317" = fcmp uno float %".84", %".84"
  %".318" = select  i1 %".317", float %".84", float %".316"
  %".319" = getelementptr inbounds float, ptr %".1", i64 %"d1.1"
  %".320" = load float, ptr %".319", align 4
  %".321" = fmul float %".318", %".320"
  %".322" = call float @"llvm.maximum.f32"(float %".321", float %".84")
  %".323" = getelementptr inbounds float, ptr %".3", i64 %".82"
  store float %".322", ptr %".323", align 4
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
