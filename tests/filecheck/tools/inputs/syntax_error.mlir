// A syntax error.
func.func @f( {
