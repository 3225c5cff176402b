(define (problem plan_trial_T20250102_000000_000002)
(:domain alfred)
(:objects
        agent1 - agent
        BookType - otype
        PillowType - otype
        SideTableType - rtype
        DrawerType - rtype
        BedType - rtype
        Book_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 - object
        Pillow_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 - object
        SideTable_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50 - receptacle
        Drawer_bar__plus_02_dot_25_bar__plus_00_dot_90_bar__minus_02_dot_50 - receptacle
        Bed_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50 - receptacle
        loc_bar_1_bar__minus_3_bar_2_bar_45 - location
        loc_bar_2_bar__minus_4_bar_2_bar_45 - location
        loc_bar_3_bar__minus_5_bar_2_bar_45 - location
        loc_bar_0_bar_0_bar_0_bar_30 - location
        )
(:init
        (receptacleType SideTable_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50 SideTableType)
        (receptacleType Drawer_bar__plus_02_dot_25_bar__plus_00_dot_90_bar__minus_02_dot_50 DrawerType)
        (receptacleType Bed_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50 BedType)
        (objectType Book_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 BookType)
        (objectType Pillow_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 PillowType)
        (canContain SideTableType BookType)
        (canContain SideTableType PillowType)
        (canContain DrawerType BookType)
        (canContain DrawerType PillowType)
        (canContain BedType BookType)
        (canContain BedType PillowType)
        (pickupable Book_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50)
        (pickupable Pillow_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50)
        (openable Drawer_bar__plus_02_dot_25_bar__plus_00_dot_90_bar__minus_02_dot_50)
        (atLocation agent1 loc_bar_0_bar_0_bar_0_bar_30)
        (inReceptacle Book_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 Drawer_bar__plus_02_dot_25_bar__plus_00_dot_90_bar__minus_02_dot_50)
        (inReceptacle Pillow_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 Bed_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50)
        (receptacleAtLocation SideTable_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50 loc_bar_1_bar__minus_3_bar_2_bar_45)
        (receptacleAtLocation Drawer_bar__plus_02_dot_25_bar__plus_00_dot_90_bar__minus_02_dot_50 loc_bar_2_bar__minus_4_bar_2_bar_45)
        (receptacleAtLocation Bed_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50 loc_bar_3_bar__minus_5_bar_2_bar_45)
        (objectAtLocation Book_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 loc_bar_2_bar__minus_4_bar_2_bar_45)
        (objectAtLocation Pillow_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 loc_bar_3_bar__minus_5_bar_2_bar_45)
        )
(:goal (and (exists (?r - receptacle) (exists (?o - object) (and (inReceptacle ?o ?r) (objectType ?o BookType) (receptacleType ?r SideTableType))))))
)
