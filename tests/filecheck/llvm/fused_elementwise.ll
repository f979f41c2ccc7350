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
  %".74" = load i1, i1* %"huge_trig_arg"
  br i1 %".74", label %"then", label %"endif"
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
  %".18" = fcmp olt float %".17", 0x4310000000000000
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
  %".29" = call double @"llvm.fma.f64"(double %".26", double 0xb91f1976b7ed8fbc, double %".28")
  %".30" = fadd double %".25", 0x4338000000000000
  %".31" = bitcast double %".30" to i64
  %".32" = trunc i64 %".31" to i32
  %".33" = and i32 %".32", 3
  %".34" = load i1, i1* %"huge_trig_arg"
  %".35" = or i1 %".34", %".21"
  store i1 %".35", i1* %"huge_trig_arg"
  %".37" = fptrunc double %".29" to float
  %".38" = fmul float %".37", %".37"
  %".39" = fmul float %".38", %".37"
  %".40" = fmul float 0x3fe0000000000000, %".38"
  %".41" = fsub float 0x3ff0000000000000, %".40"
  %".42" = call float @"llvm.fma.f32"(float 0x3ec6db8ac0000000, float %".38", float 0xbf2a013980000000)
  %".43" = call float @"llvm.fma.f32"(float %".42", float %".38", float 0x3f811110e0000000)
  %".44" = call float @"llvm.fma.f32"(float %".43", float %".38", float 0xbfc5555560000000)
  %".45" = call float @"llvm.fma.f32"(float %".39", float %".44", float %".37")
  %".46" = fmul float %".38", %".38"
  %".47" = call float @"llvm.fma.f32"(float 0xbe92520ba0000000, float %".38", float 0x3efa015ba0000000)
  %".48" = call float @"llvm.fma.f32"(float %".47", float %".38", float 0xbf56c16c00000000)
  %".49" = call float @"llvm.fma.f32"(float %".48", float %".38", float 0x3fa5555560000000)
  %".50" = fsub float 0x3ff0000000000000, %".41"
  %".51" = fsub float %".50", %".40"
  %".52" = call float @"llvm.fma.f32"(float %".46", float %".49", float %".51")
  %".53" = fadd float %".41", %".52"
  %".54" = trunc i32 %".33" to i1
  %".55" = icmp uge i32 %".33", 2
  %".56" = select  i1 %".54", float %".53", float %".45"
  %".57" = fneg float %".56"
  %".58" = select  i1 %".55", float %".57", float %".56"
  %".59" = call float @"llvm.fabs.f32"(float %".16")
  %".60" = fcmp olt float %".59", 0x7ff0000000000000
  %".61" = select  i1 %".60", float %".58", float 0x7ff8000000000000
  %".62" = fcmp oeq float %".16",              0x0
  %".63" = select  i1 %".62", float %".16", float %".61"
  %".64" = fcmp uno float %".16", %".16"
  %".65" = select  i1 %".64", float %".16", float %".63"
  %".66" = getelementptr inbounds float, ptr %".1", i64 %"d1"
  %".67" = load float, ptr %".66", align 4
  %".68" = fmul float %".65", %".67"
  %".69" = call float @"llvm.maximum.f32"(float %".68", float %".16")
  %".70" = getelementptr inbounds float, ptr %".3", i64 %".14"
  store float %".69", ptr %".70", align 4
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
  %".77" = icmp slt i64 %"d0.1", 4
  br i1 %".77", label %"d0.body.1", label %"d0.exit.1"
d0.body.1:
  br label %"d1.head.1"
d0.exit.1:
  br label %"endif"
d1.head.1:
  %"d1.1" = phi  i64 [0, %"d0.body.1"], [%"d1.next.1", %"d1.body.1"]
  %".80" = icmp slt i64 %"d1.1", 8
  br i1 %".80", label %"d1.body.1", label %"d1.exit.1"
d1.body.1:
  %".82" = mul nuw nsw i64 %"d0.1", 8
  %".83" = add i64 %".82", %"d1.1"
  %".84" = getelementptr inbounds float, ptr %".2", i64 %".83"
  %".85" = load float, ptr %".84", align 4
  %".86" = call float @"llvm.fabs.f32"(float %".85")
  %".87" = fcmp olt float %".86", 0x4310000000000000
  %".88" = xor i1 %".87", -1
  %".89" = fcmp olt float %".86", 0x7ff0000000000000
  %".90" = and i1 %".88", %".89"
  %".91" = select  i1 %".87", float %".85", float              0x0
  %".92" = fpext float %".91" to double
  %".93" = fmul double %".92", 0x3fe45f306dc9c883
  %".94" = call double @"llvm.roundeven.f64"(double %".93")
  %".95" = fneg double %".94"
  %".96" = call double @"llvm.fma.f64"(double %".95", double 0x3ff921fb54442d18, double %".92")
  %".97" = call double @"llvm.fma.f64"(double %".95", double 0x3c91a62633145c07, double %".96")
  %".98" = call double @"llvm.fma.f64"(double %".95", double 0xb91f1976b7ed8fbc, double %".97")
  %".99" = fadd double %".94", 0x4338000000000000
  %".100" = bitcast double %".99" to i64
  %".101" = trunc i64 %".100" to i32
  %".102" = and i32 %".101", 3
  %".103" = fpext float %".85" to double
  %".104" = select  i1 %".90", double %".103", double 0x4310000000000000
  %".105" = bitcast double %".104" to i64
  %".106" = and i64 %".105", 9223372036854775807
  %".107" = lshr i64 %".106", 52
  %".108" = sub i64 %".107", 1075
  %".109" = and i64 %".106", 4503599627370495
  %".110" = or i64 %".109", 4503599627370496
  %".111" = lshr i64 %".110", 32
  %".112" = and i64 %".110", 4294967295
  %".113" = add i64 %".108", 30
  %".114" = icmp slt i64 %".113", 0
  %".115" = select  i1 %".114", i64 0, i64 %".113"
  %".116" = lshr i64 %".115", 5
  %".117" = and i64 %".115", 31
  %".118" = add i64 %".116", 0
  %".119" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".118"
  %".120" = load i64, [41 x i64]* %".119"
  %".121" = add i64 %".116", 1
  %".122" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".121"
  %".123" = load i64, [41 x i64]* %".122"
  %".124" = add i64 %".116", 2
  %".125" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".124"
  %".126" = load i64, [41 x i64]* %".125"
  %".127" = add i64 %".116", 3
  %".128" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".127"
  %".129" = load i64, [41 x i64]* %".128"
  %".130" = add i64 %".116", 4
  %".131" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".130"
  %".132" = load i64, [41 x i64]* %".131"
  %".133" = add i64 %".116", 5
  %".134" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".133"
  %".135" = load i64, [41 x i64]* %".134"
  %".136" = add i64 %".116", 6
  %".137" = getelementptr inbounds [41 x i64], [41 x i64]* @"tp_two_over_pi_words", i64 0, i64 %".136"
  %".138" = load i64, [41 x i64]* %".137"
  %".139" = sub i64 32, %".117"
  %".140" = shl i64 %".120", 32
  %".141" = or i64 %".140", %".123"
  %".142" = lshr i64 %".141", %".139"
  %".143" = and i64 %".142", 4294967295
  %".144" = shl i64 %".123", 32
  %".145" = or i64 %".144", %".126"
  %".146" = lshr i64 %".145", %".139"
  %".147" = and i64 %".146", 4294967295
  %".148" = shl i64 %".126", 32
  %".149" = or i64 %".148", %".129"
  %".150" = lshr i64 %".149", %".139"
  %".151" = and i64 %".150", 4294967295
  %".152" = shl i64 %".129", 32
  %".153" = or i64 %".152", %".132"
  %".154" = lshr i64 %".153", %".139"
  %".155" = and i64 %".154", 4294967295
  %".156" = shl i64 %".132", 32
  %".157" = or i64 %".156", %".135"
  %".158" = lshr i64 %".157", %".139"
  %".159" = and i64 %".158", 4294967295
  %".160" = shl i64 %".135", 32
  %".161" = or i64 %".160", %".138"
  %".162" = lshr i64 %".161", %".139"
  %".163" = and i64 %".162", 4294967295
  %".164" = mul i64 %".112", %".143"
  %".165" = and i64 %".164", 4294967295
  %".166" = add i64 0, %".165"
  %".167" = mul i64 %".112", %".147"
  %".168" = and i64 %".167", 4294967295
  %".169" = add i64 0, %".168"
  %".170" = lshr i64 %".167", 32
  %".171" = add i64 %".166", %".170"
  %".172" = mul i64 %".111", %".147"
  %".173" = and i64 %".172", 4294967295
  %".174" = add i64 %".171", %".173"
  %".175" = mul i64 %".112", %".151"
  %".176" = and i64 %".175", 4294967295
  %".177" = add i64 0, %".176"
  %".178" = lshr i64 %".175", 32
  %".179" = add i64 %".169", %".178"
  %".180" = mul i64 %".111", %".151"
  %".181" = and i64 %".180", 4294967295
  %".182" = add i64 %".179", %".181"
  %".183" = lshr i64 %".180", 32
  %".184" = add i64 %".174", %".183"
  %".185" = mul i64 %".112", %".155"
  %".186" = and i64 %".185", 4294967295
  %".187" = add i64 0, %".186"
  %".188" = lshr i64 %".185", 32
  %".189" = add i64 %".177", %".188"
  %".190" = mul i64 %".111", %".155"
  %".191" = and i64 %".190", 4294967295
  %".192" = add i64 %".189", %".191"
  %".193" = lshr i64 %".190", 32
  %".194" = add i64 %".182", %".193"
  %".195" = mul i64 %".112", %".159"
  %".196" = and i64 %".195", 4294967295
  %".197" = add i64 0, %".196"
  %".198" = lshr i64 %".195", 32
  %".199" = add i64 %".187", %".198"
  %".200" = mul i64 %".111", %".159"
  %".201" = and i64 %".200", 4294967295
  %".202" = add i64 %".199", %".201"
  %".203" = lshr i64 %".200", 32
  %".204" = add i64 %".192", %".203"
  %".205" = mul i64 %".112", %".163"
  %".206" = and i64 %".205", 4294967295
  %".207" = add i64 0, %".206"
  %".208" = lshr i64 %".205", 32
  %".209" = add i64 %".197", %".208"
  %".210" = mul i64 %".111", %".163"
  %".211" = and i64 %".210", 4294967295
  %".212" = add i64 %".209", %".211"
  %".213" = lshr i64 %".210", 32
  %".214" = add i64 %".202", %".213"
  %".215" = lshr i64 %".207", 32
  %".216" = add i64 %".212", %".215"
  %".217" = and i64 %".207", 4294967295
  %".218" = lshr i64 %".216", 32
  %".219" = add i64 %".214", %".218"
  %".220" = and i64 %".216", 4294967295
  %".221" = lshr i64 %".219", 32
  %".222" = add i64 %".204", %".221"
  %".223" = and i64 %".219", 4294967295
  %".224" = lshr i64 %".222", 32
  %".225" = add i64 %".194", %".224"
  %".226" = and i64 %".222", 4294967295
  %".227" = lshr i64 %".225", 32
  %".228" = add i64 %".184", %".227"
  %".229" = and i64 %".225", 4294967295
  %".230" = and i64 %".228", 4294967295
  %".231" = lshr i64 %".230", 30
  %".232" = lshr i64 %".230", 29
  %".233" = and i64 %".232", 1
  %".234" = add i64 %".231", %".233"
  %".235" = and i64 %".230", 1073741823
  %".236" = uitofp i64 %".235" to double
  %".237" = fmul double %".236", 0x3e10000000000000
  %".238" = uitofp i64 %".233" to double
  %".239" = fsub double %".237", %".238"
  %".240" = uitofp i64 %".229" to double
  %".241" = fmul double %".240", 0x3c10000000000000
  %".242" = uitofp i64 %".226" to double
  %".243" = fmul double %".242", 0x3a10000000000000
  %".244" = uitofp i64 %".223" to double
  %".245" = fmul double %".244", 0x3810000000000000
  %".246" = fadd double %".239", %".241"
  %".247" = fsub double %".246", %".239"
  %".248" = fsub double %".246", %".247"
  %".249" = fsub double %".239", %".248"
  %".250" = fsub double %".241", %".247"
  %".251" = fadd double %".249", %".250"
  %".252" = fadd double %".246", %".243"
  %".253" = fsub double %".252", %".246"
  %".254" = fsub double %".252", %".253"
  %".255" = fsub double %".246", %".254"
  %".256" = fsub double %".243", %".253"
  %".257" = fadd double %".255", %".256"
  %".258" = fadd double %".252", %".245"
  %".259" = fsub double %".258", %".252"
  %".260" = fsub double %".258", %".259"
  %".261" = fsub double %".252", %".260"
  %".262" = fsub double %".245", %".259"
  %".263" = fadd double %".261", %".262"
  %".264" = uitofp i64 %".220" to double
  %".265" = fmul double %".264", 0x3610000000000000
  %".266" = fadd double %".265", %".251"
  %".267" = fadd double %".266", %".257"
  %".268" = fadd double %".267", %".263"
  %".269" = fadd double %".258", %".268"
  %".270" = fsub double %".269", %".258"
  %".271" = fsub double %".268", %".270"
  %".272" = fmul double %".269", 0x3ff921fb54442d18
  %".273" = fneg double %".272"
  %".274" = call double @"llvm.fma.f64"(double %".269", double 0x3ff921fb54442d18, double %".273")
  %".275" = fmul double %".269", 0x3c91a62633145c07
  %".276" = fmul double %".271", 0x3ff921fb54442d18
  %".277" = fadd double %".275", %".276"
  %".278" = fadd double %".274", %".277"
  %".279" = fadd double %".272", %".278"
  %".280" = fsub double %".279", %".272"
  %".281" = fsub double %".278", %".280"
  %".282" = icmp slt i64 %".105", 0
  %".283" = sub i64 0, %".234"
  %".284" = select  i1 %".282", i64 %".283", i64 %".234"
  %".285" = and i64 %".284", 3
  %".286" = fneg double %".279"
  %".287" = select  i1 %".282", double %".286", double %".279"
  %".288" = fneg double %".281"
  %".289" = select  i1 %".282", double %".288", double %".281"
  %".290" = trunc i64 %".285" to i32
  %".291" = select  i1 %".90", i32 %".290", i32 %".102"
  %".292" = fadd double %".287", %".289"
  %".293" = select  i1 %".90", double %".292", double %".98"
  %".294" = fptrunc double %".293" to float
  %".295" = fmul float %".294", %".294"
  %".296" = fmul float %".295", %".294"
  %".297" = fmul float 0x3fe0000000000000, %".295"
  %".298" = fsub float 0x3ff0000000000000, %".297"
  %".299" = call float @"llvm.fma.f32"(float 0x3ec6db8ac0000000, float %".295", float 0xbf2a013980000000)
  %".300" = call float @"llvm.fma.f32"(float %".299", float %".295", float 0x3f811110e0000000)
  %".301" = call float @"llvm.fma.f32"(float %".300", float %".295", float 0xbfc5555560000000)
  %".302" = call float @"llvm.fma.f32"(float %".296", float %".301", float %".294")
  %".303" = fmul float %".295", %".295"
  %".304" = call float @"llvm.fma.f32"(float 0xbe92520ba0000000, float %".295", float 0x3efa015ba0000000)
  %".305" = call float @"llvm.fma.f32"(float %".304", float %".295", float 0xbf56c16c00000000)
  %".306" = call float @"llvm.fma.f32"(float %".305", float %".295", float 0x3fa5555560000000)
  %".307" = fsub float 0x3ff0000000000000, %".298"
  %".308" = fsub float %".307", %".297"
  %".309" = call float @"llvm.fma.f32"(float %".303", float %".306", float %".308")
  %".310" = fadd float %".298", %".309"
  %".311" = trunc i32 %".291" to i1
  %".312" = icmp uge i32 %".291", 2
  %".313" = select  i1 %".311", float %".310", float %".302"
  %".314" = fneg float %".313"
  %".315" = select  i1 %".312", float %".314", float %".313"
  %".316" = call float @"llvm.fabs.f32"(float %".85")
  %".317" = fcmp olt float %".316", 0x7ff0000000000000
  %".318" = select  i1 %".317", float %".315", float 0x7ff8000000000000
  %".319" = fcmp oeq float %".85",              0x0
  %".320" = select  i1 %".319", float %".85", float %".318"
  %".321" = fcmp uno float %".85", %".85"
  %".322" = select  i1 %".321", float %".85", float %".320"
  %".323" = getelementptr inbounds float, ptr %".1", i64 %"d1.1"
  %".324" = load float, ptr %".323", align 4
  %".325" = fmul float %".322", %".324"
  %".326" = call float @"llvm.maximum.f32"(float %".325", float %".85")
  %".327" = getelementptr inbounds float, ptr %".3", i64 %".83"
  store float %".326", ptr %".327", align 4
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