package term

// FitWidth is fitWidth, for the tests of package term_test.
var FitWidth = fitWidth
