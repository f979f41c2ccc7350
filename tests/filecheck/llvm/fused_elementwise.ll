; ModuleID = "golden"
target triple = "x86_64-unknown-linux-gnu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

define internal void @"golden_k0_max"(ptr noalias %".1", ptr noalias %".2", ptr noalias %".3", ptr noalias %".4") noinline nounwind optsize "prefer-vector-width"="512" "tensorplay-cheap"
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
  %".71" = load i1, i1* %"huge_trig_arg"
  br i1 %".71", label %"then", label %"endif"
d1.head:
  %"d1" = phi  i64 [0, %"d0.body"], [%"d1.next", %"d1.body"]
  %".11" = icmp slt i64 %"d1", 8
  br i1 %".11", label %"d1.body", label %"d1.exit"
d1.body:
  %".13" = mul nuw nsw i64 %"d0", 8
  %".14" = add i64 %".13", %"d1"
  %".15" = getelementptr inbounds float, ptr %".2", i64 %".14"
  %".16" = load float, ptr %".15", align 4
  %".17" = call float @"llvm.fabs.f32"(float %".16")
  %".18" = fcmp olt float %".17", 0x41d0000000000000
  %".19" = xor i1 %".18", -1
  %".20" = fcmp olt float %".17", 0x7ff0000000000000
  %".21" = and i1 %".19", %".20"
  %".22" = select  i1 %".18", float %".16", float              0x0
  %".23" = fpext float %".22" to double
  %".24" = fmul double %".23", 0x3fe45f306dc9c883
  %".25" = call double @"llvm.roundeven.f64"(double %".24")
  %".26" = fneg double %".25"
  %".27" = call double @"llvm.fma.f64"(double %".26", double 0x3ff921fb54442d18, double %".23")
  %".28" = call double @"llvm.fma.f64"(double %".26", double 0x3c91a62633145c07, double %".27")
  %".29" = fptosi double %".25" to i32
  %".30" = and i32 %".29", 3
  %".31" = load i1, i1* %"huge_trig_arg"
  %".32" = or i1 %".31", %".21"
  store i1 %".32", i1* %"huge_trig_arg"
  %".34" = fptrunc double %".28" to float
  %".35" = fmul float %".34", %".34"
  %".36" = fmul float %".35", %".34"
  %".37" = fmul float 0x3fe0000000000000, %".35"
  %".38" = fsub float 0x3ff0000000000000, %".37"
  %".39" = call float @"llvm.fma.f32"(float 0x3ec6db8ac0000000, float %".35", float 0xbf2a013980000000)
  %".40" = call float @"llvm.fma.f32"(float %".39", float %".35", float 0x3f811110e0000000)
  %".41" = call float @"llvm.fma.f32"(float %".40", float %".35", float 0xbfc5555560000000)
  %".42" = call float @"llvm.fma.f32"(float %".36", float %".41", float %".34")
  %".43" = fmul float %".35", %".35"
  %".44" = call float @"llvm.fma.f32"(float 0xbe92520ba0000000, float %".35", float 0x3efa015ba0000000)
  %".45" = call float @"llvm.fma.f32"(float %".44", float %".35", float 0xbf56c16c00000000)
  %".46" = call float @"llvm.fma.f32"(float %".45", float %".35", float 0x3fa5555560000000)
  %".47" = fsub float 0x3ff0000000000000, %".38"
  %".48" = fsub float %".47", %".37"
  %".49" = call float @"llvm.fma.f32"(float %".43", float %".46", float %".48")
  %".50" = fadd float %".38", %".49"
  %".51" = trunc i32 %".30" to i1
  %".52" = icmp uge i32 %".30", 2
  %".53" = select  i1 %".51", float %".50", float %".42"
  %".54" = fneg float %".53"
  %".55" = select  i1 %".52", float %".54", float %".53"
  %".56" = call float @"llvm.fabs.f32"(float %".16")
  %".57" = fcmp olt float %".56", 0x7ff0000000000000
  %".58" = select  i1 %".57", float %".55", float 0x7ff8000000000000
  %".59" = fcmp oeq float %".16",              0x0
  %".60" = select  i1 %".59", float %".16", float %".58"
  %".61" = fcmp uno float %".16", %".16"
  %".62" = select  i1 %".61", float %".16", float %".60"
  %".63" = getelementptr inbounds float, ptr %".1", i64 %"d1"
  %".64" = load float, ptr %".63", align 4
  %".65" = fmul float %".62", %".64"
  %".66" = call float @"llvm.maximum.f32"(float %".65", float %".16")
  %".67" = getelementptr inbounds float, ptr %".3", i64 %".14"
  store float %".66", ptr %".67", align 4
  %"d1.next" = add nuw nsw i64 %"d1", 1
  br label %"d1.head"
d1.exit:
  %"d0.next" = add nuw nsw i64 %"d0", 1
  br label %"d0.head", !llvm.loop !1
then:
  br label %"d0.head.1"
endif:
  ret void
d0.head.1:
  %"d0.1" = phi  i64 [0, %"then"], [%"d0.next.1", %"d1.exit.1"]
  %".74" = icmp slt i64 %"d0.1", 4
  br i1 %".74", label %"d0.body.1", label %"d0.exit.1"
d0.body.1:
  br label %"d1.head.1"
d0.exit.1:
  br label %"endif"
d1.head.1:
  %"d1.1" = phi  i64 [0, %"d0.body.1"], [%"d1.next.1", %"d1.body.1"]
  %".77" = icmp slt i64 %"d1.1", 8
  br i1 %".77", label %"d1.body.1", label %"d1.exit.1"
d1.body.1:
  %".79" = mul nuw nsw i64 %"d0.1", 8
  %".80" = add i64 %".79", %"d1.1"
  %".81" = getelementptr inbounds float, ptr %".2", i64 %".80"
  %".82" = load float, ptr %".81", align 4
  %".83" = call float @"llvm.fabs.f32"(float %".82")
  %".84" = fcmp olt float %".83", 0x41d0000000000000
  %".85" = xor i1 %".84", -1
  %".86" = fcmp olt float %".83", 0x7ff0000000000000
  %".87" = and i1 %".85", %".86"
  %".88" = select  i1 %".84", float %".82", float              0x0
  %".89" = fpext float %".88" to double
  %".90" = fmul double %".89", 0x3fe45f306dc9c883
  %".91" = call double @"llvm.roundeven.f64"(double %".90")
  %".92" = fneg double %".91"
  %".93" = call double @"llvm.fma.f64"(double %".92", double 0x3ff921fb54442d18, double %".89")
  %".94" = call double @"llvm.fma.f64"(double %".92", double 0x3c91a62633145c07, double %".93")
  %".95" = fptosi double %".91" to i32
  %".96" = and i32 %".95", 3
  %".97" = fpext float %".82" to double
  %".98" = select  i1 %".87", double %".97", double 0x4310000000000000
  %".99" = bitcast double %".98" to i64
  %".100" = and i64 %".99", 9223372036854775807
  %".101" = lshr i64 %".100", 52
  %".102" = sub i64 %".101", 1075
  %".103" = and i64 %".100", 4503599627370495
  %".104" = or i64 %".103", 4503599627370496
  %".105" = lshr i64 %".104", 32
  %".106" = and i64 %".104", 4294967295
  %".107" = add i64 %".102", 30
  %".108" = icmp slt i64 %".107", 0
  %".109" = select  i1 %".108", i64 0, i64 %".107"
  %".110" = lshr i64 %".109", 5
  %".111" = and i64 %".109", 31
  %".112" = add i64 %".110", 0
  %".113" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".112"
  %".114" = load i64, [41 x i64]* %".113"
  %".115" = add i64 %".110", 1
  %".116" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".115"
  %".117" = load i64, [41 x i64]* %".116"
  %".118" = add i64 %".110", 2
  %".119" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".118"
  %".120" = load i64, [41 x i64]* %".119"
  %".121" = add i64 %".110", 3
  %".122" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".121"
  %".123" = load i64, [41 x i64]* %".122"
  %".124" = add i64 %".110", 4
  %".125" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".124"
  %".126" = load i64, [41 x i64]* %".125"
  %".127" = add i64 %".110", 5
  %".128" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".127"
  %".129" = load i64, [41 x i64]* %".128"
  %".130" = add i64 %".110", 6
  %".131" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".130"
  %".132" = load i64, [41 x i64]* %".131"
  %".133" = sub i64 32, %".111"
  %".134" = shl i64 %".114", 32
  %".135" = or i64 %".134", %".117"
  %".136" = lshr i64 %".135", %".133"
  %".137" = and i64 %".136", 4294967295
  %".138" = shl i64 %".117", 32
  %".139" = or i64 %".138", %".120"
  %".140" = lshr i64 %".139", %".133"
  %".141" = and i64 %".140", 4294967295
  %".142" = shl i64 %".120", 32
  %".143" = or i64 %".142", %".123"
  %".144" = lshr i64 %".143", %".133"
  %".145" = and i64 %".144", 4294967295
  %".146" = shl i64 %".123", 32
  %".147" = or i64 %".146", %".126"
  %".148" = lshr i64 %".147", %".133"
  %".149" = and i64 %".148", 4294967295
  %".150" = shl i64 %".126", 32
  %".151" = or i64 %".150", %".129"
  %".152" = lshr i64 %".151", %".133"
  %".153" = and i64 %".152", 4294967295
  %".154" = shl i64 %".129", 32
  %".155" = or i64 %".154", %".132"
  %".156" = lshr i64 %".155", %".133"
  %".157" = and i64 %".156", 4294967295
  %".158" = mul i64 %".106", %".137"
  %".159" = and i64 %".158", 4294967295
  %".160" = add i64 0, %".159"
  %".161" = mul i64 %".106", %".141"
  %".162" = and i64 %".161", 4294967295
  %".163" = add i64 0, %".162"
  %".164" = lshr i64 %".161", 32
  %".165" = add i64 %".160", %".164"
  %".166" = mul i64 %".105", %".141"
  %".167" = and i64 %".166", 4294967295
  %".168" = add i64 %".165", %".167"
  %".169" = mul i64 %".106", %".145"
  %".170" = and i64 %".169", 4294967295
  %".171" = add i64 0, %".170"
  %".172" = lshr i64 %".169", 32
  %".173" = add i64 %".163", %".172"
  %".174" = mul i64 %".105", %".145"
  %".175" = and i64 %".174", 4294967295
  %".176" = add i64 %".173", %".175"
  %".177" = lshr i64 %".174", 32
  %".178" = add i64 %".168", %".177"
  %".179" = mul i64 %".106", %".149"
  %".180" = and i64 %".179", 4294967295
  %".181" = add i64 0, %".180"
  %".182" = lshr i64 %".179", 32
  %".183" = add i64 %".171", %".182"
  %".184" = mul i64 %".105", %".149"
  %".185" = and i64 %".184", 4294967295
  %".186" = add i64 %".183", %".185"
  %".187" = lshr i64 %".184", 32
  %".188" = add i64 %".176", %".187"
  %".189" = mul i64 %".106", %".153"
  %".190" = and i64 %".189", 4294967295
  %".191" = add i64 0, %".190"
  %".192" = lshr i64 %".189", 32
  %".193" = add i64 %".181", %".192"
  %".194" = mul i64 %".105", %".153"
  %".195" = and i64 %".194", 4294967295
  %".196" = add i64 %".193", %".195"
  %".197" = lshr i64 %".194", 32
  %".198" = add i64 %".186", %".197"
  %".199" = mul i64 %".106", %".157"
  %".200" = and i64 %".199", 4294967295
  %".201" = add i64 0, %".200"
  %".202" = lshr i64 %".199", 32
  %".203" = add i64 %".191", %".202"
  %".204" = mul i64 %".105", %".157"
  %".205" = and i64 %".204", 4294967295
  %".206" = add i64 %".203", %".205"
  %".207" = lshr i64 %".204", 32
  %".208" = add i64 %".196", %".207"
  %".209" = lshr i64 %".201", 32
  %".210" = add i64 %".206", %".209"
  %".211" = and i64 %".201", 4294967295
  %".212" = lshr i64 %".210", 32
  %".213" = add i64 %".208", %".212"
  %".214" = and i64 %".210", 4294967295
  %".215" = lshr i64 %".213", 32
  %".216" = add i64 %".198", %".215"
  %".217" = and i64 %".213", 4294967295
  %".218" = lshr i64 %".216", 32
  %".219" = add i64 %".188", %".218"
  %".220" = and i64 %".216", 4294967295
  %".221" = lshr i64 %".219", 32
  %".222" = add i64 %".178", %".221"
  %".223" = and i64 %".219", 4294967295
  %".224" = and i64 %".222", 4294967295
  %".225" = lshr i64 %".224", 30
  %".226" = lshr i64 %".224", 29
  %".227" = and i64 %".226", 1
  %".228" = add i64 %".225", %".227"
  %".229" = and i64 %".224", 1073741823
  %".230" = uitofp i64 %".229" to double
  %".231" = fmul double %".230", 0x3e10000000000000
  %".232" = uitofp i64 %".227" to double
  %".233" = fsub double %".231", %".232"
  %".234" = uitofp i64 %".223" to double
  %".235" = fmul double %".234", 0x3c10000000000000
  %".236" = uitofp i64 %".220" to double
  %".237" = fmul double %".236", 0x3a10000000000000
  %".238" = uitofp i64 %".217" to double
  %".239" = fmul double %".238", 0x3810000000000000
  %".240" = fadd double %".233", %".235"
  %".241" = fsub double %".240", %".233"
  %".242" = fsub double %".240", %".241"
  %".243" = fsub double %".233", %".242"
  %".244" = fsub double %".235", %".241"
  %".245" = fadd double %".243", %".244"
  %".246" = fadd double %".240", %".237"
  %".247" = fsub double %".246", %".240"
  %".248" = fsub double %".246", %".247"
  %".249" = fsub double %".240", %".248"
  %".250" = fsub double %".237", %".247"
  %".251" = fadd double %".249", %".250"
  %".252" = fadd double %".246", %".239"
  %".253" = fsub double %".252", %".246"
  %".254" = fsub double %".252", %".253"
  %".255" = fsub double %".246", %".254"
  %".256" = fsub double %".239", %".253"
  %".257" = fadd double %".255", %".256"
  %".258" = uitofp i64 %".214" to double
  %".259" = fmul double %".258", 0x3610000000000000
  %".260" = fadd double %".259", %".245"
  %".261" = fadd double %".260", %".251"
  %".262" = fadd double %".261", %".257"
  %".263" = fadd double %".252", %".262"
  %".264" = fsub double %".263", %".252"
  %".265" = fsub double %".262", %".264"
  %".266" = fmul double %".263", 0x3ff921fb54442d18
  %".267" = fneg double %".266"
  %".268" = call double @"llvm.fma.f64"(double %".263", double 0x3ff921fb54442d18, double %".267")
  %".269" = fmul double %".263", 0x3c91a62633145c07
  %".270" = fmul double %".265", 0x3ff921fb54442d18
  %".271" = fadd double %".269", %".270"
  %".272" = fadd double %".268", %".271"
  %".273" = fadd double %".266", %".272"
  %".274" = fsub double %".273", %".266"
  %".275" = fsub double %".272", %".274"
  %".276" = icmp slt i64 %".99", 0
  %".277" = sub i64 0, %".228"
  %".278" = select  i1 %".276", i64 %".277", i64 %".228"
  %".279" = and i64 %".278", 3
  %".280" = fneg double %".273"
  %".281" = select  i1 %".276", double %".280", double %".273"
  %".282" = fneg double %".275"
  %".283" = select  i1 %".276", double %".282", double %".275"
  %".284" = trunc i64 %".279" to i32
  %".285" = select  i1 %".87", i32 %".284", i32 %".96"
  %".286" = fadd double %".281", %".283"
  %".287" = select  i1 %".87", double %".286", double %".94"
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
  %".305" = trunc i32 %".285" to i1
  %".306" = icmp uge i32 %".285", 2
  %".307" = select  i1 %".305", float %".304", float %".296"
  %".308" = fneg float %".307"
  %".309" = select  i1 %".306", float %".308", float %".307"
  %".310" = call float @"llvm.fabs.f32"(float %".82")
  %".311" = fcmp olt float %".310", 0x7ff0000000000000
  %".312" = select  i1 %".311", float %".309", float 0x7ff8000000000000
  %".313" = fcmp oeq float %".82",              0x0
  %".314" = select  i1 %".313", float %".82", float %".312"
  %".315" = fcmp uno float %".82", %".82"
  %".316" = select  i1 %".315", float %".82", float %".314"
  %".317" = getelementptr inbounds float, ptr %".1", i64 %"d1.1"
  %".318" = load float, ptr %".317", align 4
  %".319" = fmul float %".316", %".318"
  %".320" = call float @"llvm.maximum.f32"(float %".319", float %".82")
  %".321" = getelementptr inbounds float, ptr %".3", i64 %".80"
  store float %".320", ptr %".321", align 4
  %"d1.next.1" = add nuw nsw i64 %"d1.1", 1
  br label %"d1.head.1"
d1.exit.1:
  %"d0.next.1" = add nuw nsw i64 %"d0.1", 1
  br label %"d0.head.1", !llvm.loop !2
}

declare float @"llvm.fabs.f32"(float %".1")

declare double @"llvm.roundeven.f64"(double %".1")

declare double @"llvm.fma.f64"(double %".1", double %".2", double %".3")

declare float @"llvm.fma.f32"(float %".1", float %".2", float %".3")

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

!0 = !{ !"llvm.loop.unroll.disable" }
!1 = distinct !{!1, !0}
!2 = distinct !{!2, !0}